#!/usr/bin/env node
// Runs a command (n8n) and ends it when the process that started this one is gone, so that an
// interrupted `npm run dev` or test run never leaves an n8n server behind. SIGTERM and SIGINT are
// passed on to the command; this process exits with the command's exit code.
//
//   node scripts/n8n-watchdog.js <parent pid> <command> [args...]
'use strict';

const { spawn } = require('node:child_process');

const [parentPid, command, ...args] = process.argv.slice(2);
const child = spawn(command, args, { stdio: 'inherit' });

let stopping = false;
function stop(signal) {
	if (stopping) return;
	stopping = true;
	child.kill(signal);
	setTimeout(() => child.kill('SIGKILL'), 20_000).unref();
}
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));

const watch = setInterval(() => {
	try {
		process.kill(Number(parentPid), 0);
	} catch {
		stop('SIGTERM');
	}
}, 1000);

child.on('error', (error) => {
	console.error(`Could not start ${command}: ${error.message}`);
	process.exit(1);
});
child.on('exit', (code, signal) => {
	clearInterval(watch);
	process.exit(code ?? (signal ? 1 : 0));
});
