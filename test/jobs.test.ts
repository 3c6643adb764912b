/**
 * The behaviour every modality node shares (nodes/shared/generation.ts): waiting for jobs, the wait
 * timeout, the cancel signal, many items in flight, failures among many items, and the cost guard.
 */
import { binaryBytes, runNode } from './helpers/engine';

import type { INodeType } from 'n8n-workflow';

import { GenerationServiceImage } from '../nodes/GenerationServiceImage/GenerationServiceImage.node';
import { GenerationServiceMusic } from '../nodes/GenerationServiceMusic/GenerationServiceMusic.node';
import { GenerationServiceThreeD } from '../nodes/GenerationServiceThreeD/GenerationServiceThreeD.node';
import { GenerationServiceVideo } from '../nodes/GenerationServiceVideo/GenerationServiceVideo.node';
import { GenerationServiceVoice } from '../nodes/GenerationServiceVoice/GenerationServiceVoice.node';
import { model, pollsOf, servedBytes, sleep, submittedIds, until } from './helpers/outputs';
import type { RecordedRequest, Sandbox } from './sandbox';
import { useSandbox } from './helpers/suite';

const video = new GenerationServiceVideo();
let sandbox: Sandbox;
let credentials: { apiKey: string; baseUrl: string };

const SHORT_JOB_MS = 300;
const generate = (extra: Record<string, unknown> = {}) => ({
	operation: 'generate',
	model: model('kling-2.1'),
	prompt: 'A paper boat drifting down a rainy street',
	...extra,
});
const videoPosts = () => sandbox.requestsTo('POST', '/v1/generations/video');
const charged = (posts: RecordedRequest[]) => posts.flatMap((post) => sandbox.chargesFor(post.headers['idempotency-key']));
const items = (count: number) => Array.from({ length: count }, (_, n) => ({ n }));

useSandbox({ jobDurationMs: { video: SHORT_JOB_MS }, rateLimitPerMinute: 100_000 }, (started) => {
	sandbox = started;
	credentials = { apiKey: started.apiKey, baseUrl: started.baseUrl };
});
beforeEach(() => {
	sandbox.configure({ jobDurationMs: { video: SHORT_JOB_MS } });
});

describe('Wait for Completion', () => {
	it('on: polls GET /v1/jobs/:id until completed and returns the final job body', async () => {
		const result = await runNode(video, { credentials, parameters: generate({ download: false }) });
		expect(result.error).toBeUndefined();
		const id = String(result.items[0].json.id);
		const polls = pollsOf(sandbox, id);
		expect(polls.length).toBeGreaterThanOrEqual(1);
		expect(polls.every((poll) => poll.headers.authorization === `Bearer ${sandbox.apiKey}`)).toBe(true);
		expect(result.items[0].json).toEqual(sandbox.job(id));
		expect(result.items[0].json).toMatchObject({
			status: 'completed',
			url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/files\/job_\w+\.mp4$/),
			cost: { micro: 300_000, display: '$0.300000', currency: 'USD' },
			metadata: { duration: 5, width: 1280, height: 720, fps: 25 },
		});
		// The first poll is not sent before a second has passed: the service is not hammered.
		expect(polls[0].receivedAt - videoPosts()[0].receivedAt).toBeGreaterThanOrEqual(900);
	});

	it('off: returns the submit response at once, with no poll', async () => {
		sandbox.configure({ jobDurationMs: { video: 60_000 } });
		const result = await runNode(video, { credentials, parameters: generate({ waitForCompletion: false }) });
		expect(result.error).toBeUndefined();
		const id = String(result.items[0].json.id);
		expect(result.items[0].json).toEqual({ id, status: 'queued', estimated_cost: { micro: 300_000, display: '$0.300000' } });
		expect(result.items[0].binary).toBeUndefined();
		expect(sandbox.requestsTo('GET', '/v1/jobs/')).toHaveLength(0);
		expect(sandbox.job(id)?.status).toBe('queued');
	});
});

describe('the wait timeout', () => {
	it('ends waiting with an error that names the job, says it may still be charged and points to Get Job', async () => {
		sandbox.configure({ jobDurationMs: { video: 5_000 } });
		const result = await runNode(video, { credentials, parameters: generate({ options: { waitTimeout: 1 } }) });
		expect(videoPosts()).toHaveLength(1);
		const job = sandbox.requestsTo('GET', '/v1/jobs/')[0]?.path.split('/').pop() ?? '';
		expect(job).toMatch(/^job_/);
		// Still running when the node gave up: it did not wait for the 5 s job.
		expect(['queued', 'processing']).toContain(sandbox.job(job)?.status);
		expect(result.error?.message).toMatch(new RegExp(`job ${job} did not finish within 1 seconds \\[item 0\\]`));
		expect(result.error?.description).toMatch(/may still finish and be charged/);
		expect(result.error?.description).toMatch(new RegExp(`Get Job operation and Job ID ${job}`));
		// One poll within the second, and perhaps a last one at the deadline.
		expect(pollsOf(sandbox, job).length).toBeGreaterThanOrEqual(1);
		expect(pollsOf(sandbox, job).length).toBeLessThanOrEqual(2);
	});
});

describe('the cancel signal', () => {
	it('ends waiting at once, and no poll reaches the service afterwards', async () => {
		sandbox.configure({ jobDurationMs: { video: 60_000 } });
		const execution = runNode(video, { credentials, parameters: generate() });
		// Cancel while the node is in its wait loop: after the submit and the first poll.
		await until(() => sandbox.requestsTo('GET', '/v1/jobs/').length >= 1, 10_000);
		const id = sandbox.requestsTo('GET', '/v1/jobs/')[0].path.split('/').pop()!;
		// The sandbox's clock (RecordedRequest.receivedAt).
		const cancelledAt = performance.timeOrigin + performance.now();
		execution.cancel();
		const result = await execution;
		const endedAfterMs = performance.timeOrigin + performance.now() - cancelledAt;
		expect(result.run.status).toBe('canceled');
		// The job ends after 60 s; a node deaf to the signal would still be waiting for it.
		expect(endedAfterMs).toBeLessThan(3_000);
		expect(result.items).toHaveLength(0);
		console.log(`cancel: the run ended ${endedAfterMs.toFixed(0)} ms after cancel()`);

		await sleep(2_500);
		const polls = pollsOf(sandbox, id);
		expect(polls).toHaveLength(1);
		expect(sandbox.requests.filter((request) => request.receivedAt > cancelledAt)).toHaveLength(0);
		expect(['queued', 'processing']).toContain(sandbox.job(id)?.status);
	});
});

describe('many items', () => {
	it('submits 20 video jobs and waits for them together; output order and pairedItem follow the input', async () => {
		sandbox.configure({ jobDurationMs: { video: 3_000 } });
		const startedAt = Date.now();
		const result = await runNode(video, {
			credentials,
			items: items(20),
			parameters: generate({ prompt: '=item {{ $json.n }}' }),
		});
		const wallMs = Date.now() - startedAt;
		expect(result.error).toBeUndefined();
		expect(result.items).toHaveLength(20);

		const posts = videoPosts();
		expect(posts).toHaveLength(20);
		const keys = new Set(posts.map((post) => post.headers['idempotency-key']));
		expect(keys.size).toBe(20);
		const jobIdByPrompt = new Map<string, string>();
		for (const post of posts) {
			// Exactly one charge per item, under its own idempotency key.
			const charges = sandbox.chargesFor(post.headers['idempotency-key']);
			expect(charges).toHaveLength(1);
			jobIdByPrompt.set((post.body as { prompt: string }).prompt, charges[0].id);
		}
		result.items.forEach((item, n) => {
			expect(item.pairedItem).toEqual({ item: n });
			expect(item.json.id).toBe(jobIdByPrompt.get(`item ${n}`));
			expect(item.json.status).toBe('completed');
			expect(item.binary?.data.fileName).toBe(`${item.json.id}.mp4`);
		});

		const times = result.items.map((item) => sandbox.jobTimes(String(item.json.id))!);
		const lastStart = Math.max(...times.map((t) => t.startedAt!));
		const firstFinish = Math.min(...times.map((t) => t.finishedAt!));
		const lastSubmit = Math.max(...posts.map((post) => post.receivedAt));
		// Every job was submitted before the first finished, and all 20 were processing at once.
		expect(lastSubmit).toBeLessThan(firstFinish);
		expect(lastStart).toBeLessThan(firstFinish);
		// One after another, 20 jobs of 3 s would take a minute.
		expect(wallMs).toBeLessThan(20_000);

		// Each job's polls are spaced further and further apart.
		for (const item of result.items) {
			const polls = pollsOf(sandbox, String(item.json.id)).map((poll) => poll.receivedAt);
			const gaps = polls.slice(1).map((time, i) => time - polls[i]);
			gaps.slice(1).forEach((gap, i) => expect(gap).toBeGreaterThan(gaps[i]));
		}
		console.log(
			`20 jobs: submitted within ${(lastSubmit - Math.min(...posts.map((p) => p.receivedAt))).toFixed(0)} ms; ` +
				`all processing from ${(lastStart - startedAt).toFixed(0)} ms to ${(firstFinish - startedAt).toFixed(0)} ms; node took ${wallMs} ms`,
		);
	}, 30_000);

	it('keeps no more than Items in Flight submissions open at once', async () => {
		const STALL_MS = 400;
		sandbox.fault({ path: '/v1/generations/video', method: 'POST', kind: 'stall', stallMs: STALL_MS, count: 6 });
		const result = await runNode(video, {
			credentials,
			items: items(6),
			parameters: generate({ prompt: '=item {{ $json.n }}', download: false, options: { concurrency: 2 } }),
		});
		expect(result.error).toBeUndefined();
		const received = videoPosts()
			.map((post) => post.receivedAt)
			.sort((a, b) => a - b);
		expect(received).toHaveLength(6);
		// Each submission is held STALL_MS by the sandbox. Two are open at once: the second arrives
		// while the first is still held. No more than two: of any three in a row, the third arrives
		// only once one of the two before it was answered, so at least STALL_MS after the first.
		expect(received[1] - received[0]).toBeLessThan(STALL_MS);
		for (let i = 2; i < received.length; i++) expect(received[i] - received[i - 2]).toBeGreaterThanOrEqual(STALL_MS - 5);
		expect(result.items.map((item) => (item.pairedItem as { item: number }).item)).toEqual([0, 1, 2, 3, 4, 5]);
		console.log(`concurrency 2: submissions received at +${received.map((t) => (t - received[0]).toFixed(0)).join(', +')} ms`);
	});

	it('when one item fails, lets the submitted ones settle and lists their job ids in the error', async () => {
		sandbox.fault({ path: '/v1/generations/video', method: 'POST', kind: 'status', status: 400, count: 1 });
		const result = await runNode(video, { credentials, items: items(5), parameters: generate({ prompt: '=item {{ $json.n }}' }) });
		const posts = videoPosts();
		expect(posts).toHaveLength(5);
		const refused = posts.find((post) => post.fault === 'status')!;
		const failedItem = Number((refused.body as { prompt: string }).prompt.split(' ')[1]);
		expect(result.error?.message).toBe(`Simulated 400 (sandbox fault). [item ${failedItem}]`);
		expect(result.error?.description).toMatch(/Code: invalid_request · HTTP status: 400/);

		const accepted = posts.filter((post) => post !== refused);
		const jobs = charged(accepted).map((charge) => charge.id);
		expect(jobs).toHaveLength(4);
		// The description lists every job the service accepted (they may be charged)...
		expect(submittedIds(result.error?.description).sort()).toEqual([...jobs].sort());
		// ...and the node returned only once they had settled.
		for (const id of jobs) expect(sandbox.job(id)?.status).toBe('completed');
	});

	it('when a job fails while others wait, lets them finish and lists every submitted job', async () => {
		sandbox.failNextJobs(1, 'GPU out of memory');
		const result = await runNode(video, { credentials, items: items(3), parameters: generate({ prompt: '=item {{ $json.n }}' }) });
		expect(result.error?.message).toMatch(/failed: GPU out of memory \[item \d\]$/);
		const listed = submittedIds(result.error?.description);
		expect(listed).toHaveLength(3);
		const statuses = listed.map((id) => sandbox.job(id)?.status).sort();
		expect(statuses).toEqual(['completed', 'completed', 'failed']);
		expect(charged(videoPosts()).map((charge) => charge.id).sort()).toEqual(
			listed.filter((id) => sandbox.job(id)?.status === 'completed').sort(),
		);
	});

	it('when one item fails, starts no item that was still waiting for its turn', async () => {
		sandbox.fault({ path: '/v1/generations/video', method: 'POST', kind: 'status', status: 400, count: 1 });
		const result = await runNode(video, {
			credentials,
			items: items(4),
			parameters: generate({ prompt: '=item {{ $json.n }}', options: { concurrency: 1 } }),
		});
		expect(result.error?.message).toBe('Simulated 400 (sandbox fault). [item 0]');
		expect(videoPosts()).toHaveLength(1);
		expect(submittedIds(result.error?.description)).toEqual([]);
	});

	it('with Continue On Fail, keeps every other item\'s result and puts the error on its own item', async () => {
		sandbox.fault({ path: '/v1/generations/video', method: 'POST', kind: 'status', status: 400, count: 1 });
		const result = await runNode(video, {
			credentials,
			continueOnFail: true,
			items: items(4),
			parameters: generate({ prompt: '=item {{ $json.n }}' }),
		});
		expect(result.error).toBeUndefined();
		const refused = videoPosts().find((post) => post.fault === 'status')!;
		const failedItem = Number((refused.body as { prompt: string }).prompt.split(' ')[1]);
		expect(result.items).toHaveLength(4);
		result.items.forEach((item, n) => {
			expect(item.pairedItem).toEqual({ item: n });
			if (n === failedItem) {
				expect(item.json).toEqual({ error: `Simulated 400 (sandbox fault). [item ${n}]`, code: 'invalid_request', status: 400 });
			} else {
				expect(item.json.status).toBe('completed');
				expect(item.binary?.data.mimeType).toBe('video/mp4');
			}
		});
		const ok = result.items.find((_, n) => n !== failedItem)!;
		expect((await binaryBytes(ok.binary!.data)).equals(await servedBytes(String(ok.json.url)))).toBe(true);
	});
});

describe('Max Cost (cost guard)', () => {
	it('refuses an expensive video before anything is charged, with a clear error', async () => {
		const charges = sandbox.charges().length;
		const balance = sandbox.balanceMicro();
		const result = await runNode(video, {
			credentials,
			parameters: generate({ model: model('veo-3'), additionalFields: { duration: 8 }, options: { maxCostMicro: 100_000 } }),
		});
		expect(result.error?.message).toBe(
			'The estimated cost of 3840000 microdollars is above Max Cost (100000 microdollars) [item 0]',
		);
		expect(result.error?.description).toMatch(/Nothing was generated or charged/);
		const posts = videoPosts();
		expect(posts).toHaveLength(1);
		expect(posts[0].body).toMatchObject({ model: 'veo-3', duration: 8, confirm: false });
		expect(sandbox.charges()).toHaveLength(charges);
		expect(sandbox.balanceMicro()).toBe(balance);
	});

	it('lets an item under the maximum through, and refuses only the expensive one with Continue On Fail', async () => {
		const charges = sandbox.charges().length;
		const result = await runNode(video, {
			credentials,
			continueOnFail: true,
			items: [{ model: 'veo-3' }, { model: 'kling-2.1' }],
			parameters: generate({ model: model('={{ $json.model }}'), download: false, options: { maxCostMicro: 400_000 } }),
		});
		expect(result.items[0].json).toEqual({
			error: 'The estimated cost of 3840000 microdollars is above Max Cost (400000 microdollars) [item 0]',
			code: 'max_cost_exceeded',
			status: null,
		});
		expect(result.items[1].json).toMatchObject({ status: 'completed', model: 'kling-2.1', cost: { micro: 300_000 } });
		const posts = videoPosts();
		const veo = posts.filter((post) => (post.body as { model: string }).model === 'veo-3');
		const kling = posts.filter((post) => (post.body as { model: string }).model === 'kling-2.1');
		expect(veo.map((post) => (post.body as { confirm?: boolean }).confirm)).toEqual([false]);
		expect(kling.map((post) => (post.body as { confirm?: boolean }).confirm)).toEqual([false, undefined]);
		expect(sandbox.charges().slice(charges).map((charge) => charge.model)).toEqual(['kling-2.1']);
	});

	const nodes: Array<[string, INodeType, string, Record<string, unknown>, number]> = [
		['Image', new GenerationServiceImage(), 'image', { model: model('flux-pro') }, 48_000],
		['Video', video, 'video', { model: model('veo-3') }, 3_840_000],
		['Music', new GenerationServiceMusic(), 'music', { model: model('udio-long'), additionalFields: { duration: 240 } }, 230_400],
		['Voice', new GenerationServiceVoice(), 'voice', { model: model('eleven-turbo'), prompt: 'Hello there. '.repeat(100) }, 39_000],
		['3D', new GenerationServiceThreeD(), 'threeD', { model: model('hunyuan3d') }, 120_000],
	];
	it.each(nodes)('works on the %s node: zero charges, only the free estimate sent', async (_name, node, modality, extra, estimate) => {
		const charges = sandbox.charges().length;
		const balance = sandbox.balanceMicro();
		const result = await runNode(node, {
			credentials,
			parameters: { ...generate(extra), options: { maxCostMicro: 10_000 } },
		});
		expect(result.error?.message).toBe(
			`The estimated cost of ${estimate} microdollars is above Max Cost (10000 microdollars) [item 0]`,
		);
		const posts = sandbox.requestsTo('POST', `/v1/generations/${modality}`);
		expect(posts.map((post) => (post.body as { confirm?: boolean }).confirm)).toEqual([false]);
		expect(sandbox.requests).toHaveLength(1);
		expect(sandbox.charges()).toHaveLength(charges);
		expect(sandbox.balanceMicro()).toBe(balance);
	});

	it('lets a cheap image under the maximum through and charges it once', async () => {
		const result = await runNode(new GenerationServiceImage(), {
			credentials,
			parameters: { ...generate({ model: model('flux-schnell') }), options: { maxCostMicro: 10_000 } },
		});
		expect(result.error).toBeUndefined();
		expect(result.items[0].json).toMatchObject({ status: 'completed', cost: { micro: 3_000 } });
		const posts = sandbox.requestsTo('POST', '/v1/generations/image');
		expect(posts.map((post) => (post.body as { confirm?: boolean }).confirm)).toEqual([false, undefined]);
		expect(sandbox.chargesFor(posts[1].headers['idempotency-key'])).toHaveLength(1);
	});
});
