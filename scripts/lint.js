#!/usr/bin/env node
// Runs n8n's community-node lint rules (the config of `n8n-node lint`, eslint.config.mjs) over the
// code that is published: nodes/, credentials/ and package.json. The rules come from tools/lint,
// installed on first use, because their dependency tree needs overrides the package must not carry.
const { execFileSync } = require('node:child_process');
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const tools = join(root, 'tools', 'lint');
const run = (command, args, cwd) => execFileSync(command, args, { cwd, stdio: 'inherit' });

if (!existsSync(join(tools, 'node_modules', '@n8n', 'node-cli'))) {
	console.log('Installing the lint tools into tools/lint (once)...');
	// `npm install` with the committed lockfile, not `npm ci`: the registry here lacks some optional
	// platform packages the lockfile names (e.g. @unrs/resolver-binding-android-*), which `npm ci`
	// refuses; `npm install` skips them and installs the locked versions of the rest.
	run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], tools);
}
try {
	run(
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
		root,
	);
} catch (error) {
	process.exit(error.status ?? 1);
}
