import { initEngine, shutdownEngine } from './engine';

import type { Sandbox, SandboxOptions } from '../sandbox';
import { startSandbox } from '../sandbox';

/**
 * One n8n engine and one sandbox for a test file: started before its tests, stopped after, with
 * faults and recorded requests cleared before each test. `started` receives the running sandbox.
 */
export function useSandbox(
	options: SandboxOptions,
	started: (sandbox: Sandbox) => void,
	binaryMode: 'default' | 'filesystem' = 'default',
) {
	let sandbox: Sandbox | undefined;
	beforeAll(async () => {
		await initEngine(binaryMode);
		sandbox = await startSandbox(options);
		started(sandbox);
	});
	afterAll(async () => {
		await sandbox?.stop();
		await shutdownEngine();
	});
	beforeEach(() => {
		sandbox?.clearFaults();
		sandbox?.resetRecording();
	});
}
