/**
 * `npm run sandbox`: the sandbox as a standalone service, for trying the nodes in a real n8n.
 * Env: SANDBOX_PORT (default 4010), SANDBOX_HOST (default 127.0.0.1), SANDBOX_API_KEY (fixed seeded
 * key), SANDBOX_JOB_MS (run time of every async job).
 */
import { startSandbox } from './index';
import type { Modality } from './catalog';

function numberEnv(name: string): number | undefined {
	const text = process.env[name];
	if (text === undefined || text === '') return undefined;
	const value = Number(text);
	if (!Number.isInteger(value) || value < 0)
		throw new Error(`${name} must be a non-negative integer, got "${text}"`);
	return value;
}

async function main(): Promise<void> {
	const jobMs = numberEnv('SANDBOX_JOB_MS');
	const modalities: Modality[] = ['video', 'music', 'voice', 'threeD'];
	const sandbox = await startSandbox({
		port: numberEnv('SANDBOX_PORT') ?? 4010,
		host: process.env.SANDBOX_HOST || '127.0.0.1',
		apiKey: process.env.SANDBOX_API_KEY || undefined,
		jobDurationMs:
			jobMs === undefined ? undefined : Object.fromEntries(modalities.map((m) => [m, jobMs])),
	});
	const lines = [
		'Generation Service sandbox is running.',
		'',
		`  Base URL (credential "Base URL"):  ${sandbox.baseUrl}`,
		`  API key  (credential "API Key"):   ${sandbox.apiKey}`,
		`  Balance:                           $${(sandbox.balanceMicro() / 1e6).toFixed(2)}`,
		'',
		`  Control API (no auth):  ${sandbox.baseUrl}/_sandbox/state   (see test/sandbox/README.md)`,
		`    e.g. curl -X POST ${sandbox.baseUrl}/_sandbox/faults -H 'Content-Type: application/json' \\`,
		`           -d '{"path":"/v1/generations/image","kind":"status","status":503,"retryAfter":"1"}'`,
		'  Put [sandbox:fail] in a video, music, long voice or 3D prompt to make that job fail.',
		'',
		'  Ctrl+C to stop.',
	];
	console.log(lines.join('\n'));

	let stopping = false;
	const shutdown = (signal: string) => {
		if (stopping) return;
		stopping = true;
		console.log(`\n${signal}: stopping the sandbox.`);
		sandbox.stop().then(
			() => process.exit(0),
			() => process.exit(1),
		);
	};
	process.on('SIGINT', () => shutdown('SIGINT'));
	process.on('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((err: Error) => {
	console.error(`Could not start the sandbox: ${err.message}`);
	process.exit(1);
});
