// n8n's lint and scan tools live in tools/lint, installed on first use: their dependency tree needs
// npm overrides that a published community package must not carry.
const { execFileSync } = require('node:child_process');
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const tools = join(root, 'tools', 'lint');

function ensureLintTools() {
	if (existsSync(join(tools, 'node_modules', '@n8n', 'scan-community-package'))) return tools;
	console.log('Installing the lint tools into tools/lint (once)...');
	// `npm install` with the committed lockfile, not `npm ci`: the registry here lacks some optional
	// platform packages the lockfile names (e.g. @unrs/resolver-binding-android-*), which `npm ci`
	// refuses; `npm install` skips them and installs the locked versions of the rest.
	execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: tools, stdio: 'inherit' });
	return tools;
}

module.exports = { root, ensureLintTools };
