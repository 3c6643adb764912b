#!/usr/bin/env node
// The static part of n8n's community package scan (@n8n/scan-community-package), run here without
// the network: its own ESLint rule sets over (1) the packed tarball's compiled JS and package.json,
// exactly what a user's n8n installs, and (2) the sources. Its download and provenance steps need the
// public registry and GitHub and are left out. Run after `npm run build`.
const { execFileSync } = require('node:child_process');
const { mkdtempSync, readdirSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { pathToFileURL } = require('node:url');
const { root, ensureLintTools } = require('./lint-tools');

async function main() {
	const tools = ensureLintTools();
	const scanner = await import(
		pathToFileURL(join(tools, 'node_modules', '@n8n', 'scan-community-package', 'scanner', 'scanner.mjs')).href
	);
	const work = mkdtempSync(join(tmpdir(), 'gs-scan-'));
	try {
		execFileSync('npm', ['pack', '--silent', '--pack-destination', work], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
		const tarball = readdirSync(work).find((file) => file.endsWith('.tgz'));
		const packageDir = join(work, 'package');
		execFileSync('tar', ['-xzf', join(work, tarball), '-C', work]);
		const legs = [
			['packed tarball (compiled JS, package.json)', await scanner.analyzePackage(packageDir, ['**/*.js', 'package.json'])],
			['sources (nodes, credentials, package.json)', await scanner.analyzePackage(root, scanner.SOURCE_FILE_PATTERNS)],
		];
		let failed = false;
		for (const [name, result] of legs) {
			console.log(`${result.passed ? 'passed' : 'FAILED'}: ${name}${result.message ? ` (${result.message})` : ''}`);
			if (result.details) console.log(result.details);
			failed ||= !result.passed;
		}
		process.exitCode = failed ? 1 : 0;
	} finally {
		rmSync(work, { recursive: true, force: true });
	}
}

main().catch((error) => {
	console.error(error);
	process.exit(1);
});
