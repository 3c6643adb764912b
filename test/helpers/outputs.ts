/** Small helpers shared by the modality node tests: models, served bytes, waiting on the sandbox. */
import { createHash } from 'node:crypto';
import { request } from 'undici';

import type { Sandbox } from '../sandbox';

/**
 * A model chosen "From List", as a saved workflow holds it. ("By ID" mode works the same, but n8n checks
 * its regex in a vm with a 250 ms timeout before running, which a loaded CI machine can exceed.)
 */
export const model = (value: string) => ({ __rl: true, mode: 'list', value });

export const sleep = async (ms: number) => await new Promise((resolve) => setTimeout(resolve, ms));

/** The bytes the sandbox serves at an output URL, fetched independently of the node. */
export async function servedBytes(url: string): Promise<Buffer> {
	const response = await request(url);
	expect(response.statusCode).toBe(200);
	return Buffer.from(await response.body.arrayBuffer());
}

/** The sha256 and size of what the sandbox serves at a URL, streamed (never held whole). */
export async function servedDigest(url: string): Promise<{ sha256: string; size: number }> {
	const response = await request(url);
	expect(response.statusCode).toBe(200);
	const hash = createHash('sha256');
	let size = 0;
	for await (const chunk of response.body) {
		hash.update(chunk as Buffer);
		size += (chunk as Buffer).length;
	}
	return { sha256: hash.digest('hex'), size };
}

/** Waits (polling the sandbox's own state, not the service API) until `check` holds. */
export async function until(check: () => boolean, timeoutMs = 10_000, stepMs = 25): Promise<void> {
	const deadline = Date.now() + timeoutMs;
	while (!check()) {
		if (Date.now() > deadline) throw new Error(`Condition not met within ${timeoutMs} ms`);
		await sleep(stepMs);
	}
}

/** The job ids a description lists as submitted ("… (these may be charged): job_a, job_b"). */
export function submittedIds(description: string | undefined): string[] {
	const match = /may be charged\): (.*)$/m.exec(description ?? '');
	return match ? match[1].split(', ').map((id) => id.trim()) : [];
}

/** GET /v1/jobs/:id requests for one job. */
export const pollsOf = (sandbox: Sandbox, jobId: string) => sandbox.requestsTo('GET', `/v1/jobs/${jobId}`);
