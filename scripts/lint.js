#!/usr/bin/env node
// Runs n8n's community-node lint rules (the config of `n8n-node lint`, eslint.config.mjs) over the
// code that is published: nodes/, credentials/ and package.json.
const { execFileSync } = require('node:child_process');
const { join } = require('node:path');
const { root, ensureLintTools } = require('./lint-tools');

const tools = ensureLintTools();
try {
	execFileSync(
		process.execPath,
		[
			join(tools, 'node_modules', 'eslint', 'bin', 'eslint.js'),
			'--config',
			join(tools, 'eslint.config.mjs'),
			'--max-warnings',
			'0',
			...process.argv.slice(2),
			'nodes',
			'credentials',
			'package.json',
		],
		{ cwd: root, stdio: 'inherit' },
	);
} catch (error) {
	process.exit(error.status ?? 1);
}
