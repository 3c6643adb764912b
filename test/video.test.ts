import { binaryBytes, runNode } from './helpers/engine';

import { GenerationServiceVideo } from '../nodes/GenerationServiceVideo/GenerationServiceVideo.node';
import { model, pollsOf, servedBytes, until } from './helpers/outputs';
import type { Sandbox } from './sandbox';
import { useSandbox } from './helpers/suite';

const node = new GenerationServiceVideo();
let sandbox: Sandbox;
let credentials: { apiKey: string; baseUrl: string };

const generate = (extra: Record<string, unknown> = {}) => ({
	operation: 'generate',
	model: model('kling-2.1'),
	prompt: 'A paper boat drifting down a rainy street',
	...extra,
});
const videoPosts = () => sandbox.requestsTo('POST', '/v1/generations/video');

useSandbox({ jobDurationMs: { video: 300 }, rateLimitPerMinute: 100_000 }, (started) => {
	sandbox = started;
	credentials = { apiKey: started.apiKey, baseUrl: started.baseUrl };
});

describe('video generate', () => {
	it('sends every field with the spec name, waits for the job and returns the MP4 as binary', async () => {
		const result = await runNode(node, {
			credentials,
			parameters: generate({
				additionalFields: {
					image: 'https://example.com/first-frame.png',
					duration: 4,
					aspectRatio: '9:16',
					resolution: '1080p',
					webhookUrl: 'http://127.0.0.1:9/webhook/abc/webhook',
					modelParameters: '{"motion_strength": 3}',
				},
			}),
		});
		expect(result.error).toBeUndefined();
		const posts = videoPosts();
		expect(posts).toHaveLength(1);
		expect(posts[0].body).toEqual({
			model: 'kling-2.1',
			prompt: 'A paper boat drifting down a rainy street',
			image: 'https://example.com/first-frame.png',
			duration: 4,
			aspect_ratio: '9:16',
			resolution: '1080p',
			webhook_url: 'http://127.0.0.1:9/webhook/abc/webhook',
			motion_strength: 3,
		});
		const key = posts[0].headers['idempotency-key'];
		expect(key).toMatch(/^n8n-[0-9a-f]{40}$/);

		const [item] = result.items;
		const id = String(item.json.id);
		expect(id).toMatch(/^job_/);
		// The final job body, as GET /v1/jobs/:id returns it once completed.
		expect(item.json).toEqual(sandbox.job(id));
		expect(item.json).toMatchObject({
			status: 'completed',
			modality: 'video',
			model: 'kling-2.1',
			cost: { micro: 360_000, currency: 'USD' },
			metadata: { duration: 4, width: 1080, height: 1920, fps: 25 },
		});
		expect(pollsOf(sandbox, id).length).toBeGreaterThanOrEqual(1);
		expect(item.pairedItem).toEqual({ item: 0 });

		const binary = item.binary!.data;
		expect(binary).toMatchObject({ mimeType: 'video/mp4', fileExtension: 'mp4', fileName: `${id}.mp4` });
		const stored = await binaryBytes(binary);
		expect(stored.equals(await servedBytes(String(item.json.url)))).toBe(true);
		expect(stored.subarray(4, 8).toString('latin1')).toBe('ftyp');
		expect(sandbox.chargesFor(key)).toHaveLength(1);
		expect(sandbox.chargesFor(key)[0]).toMatchObject({ id, modality: 'video' });
	});

	it('puts the file in the named binary field, and leaves it out when Download Output is off', async () => {
		const named = await runNode(node, { credentials, parameters: generate({ options: { binaryPropertyName: 'clip' } }) });
		expect(Object.keys(named.items[0].binary ?? {})).toEqual(['clip']);
		sandbox.resetRecording();
		const plain = await runNode(node, { credentials, parameters: generate({ download: false }) });
		expect(plain.items[0].json.status).toBe('completed');
		expect(plain.items[0].binary).toBeUndefined();
		expect(sandbox.requestsTo('GET', '/files/')).toHaveLength(0);
	});
});

describe('video estimate', () => {
	it('returns only the estimate, sends confirm: false and charges nothing', async () => {
		const charges = sandbox.charges().length;
		const balance = sandbox.balanceMicro();
		const result = await runNode(node, {
			credentials,
			parameters: generate({
				operation: 'estimate',
				model: model('veo-3'),
				additionalFields: { duration: 8, resolution: '1080p' },
			}),
		});
		expect(result.error).toBeUndefined();
		expect(result.items[0].json).toEqual({ estimated_cost: { micro: 5_760_000, display: '$5.760000' } });
		expect(videoPosts()).toHaveLength(1);
		expect(videoPosts()[0].body).toEqual({
			model: 'veo-3',
			prompt: 'A paper boat drifting down a rainy street',
			duration: 8,
			resolution: '1080p',
			confirm: false,
		});
		expect(sandbox.requestsTo('GET', '/v1/jobs/')).toHaveLength(0);
		expect(sandbox.charges()).toHaveLength(charges);
		expect(sandbox.balanceMicro()).toBe(balance);
	});
});

describe('video validation before any request', () => {
	it.each([
		['aspectRatio', '4:3', /Aspect Ratio.*aspectRatio.*"4:3".*\[item 0\]/, /16:9, 9:16, 1:1/],
		['resolution', '4k', /Resolution.*resolution.*"4k".*\[item 0\]/, /720p, 1080p/],
		['duration', -1, /Duration.*duration.*-1.*\[item 0\]/, /positive number/],
		['duration', '={{ "abc" }}', /Duration.*duration.*"abc".*\[item 0\]/, /positive number/],
		['image', 'first-frame.png', /Source Image URL.*image.*"first-frame.png".*\[item 0\]/, /http/],
		['webhookUrl', 'not a url', /Webhook URL.*webhookUrl.*"not a url".*\[item 0\]/, /http/],
	])('refuses %s = %j with no request sent', async (field, value, message, allowed) => {
		const result = await runNode(node, { credentials, parameters: generate({ additionalFields: { [field]: value } }) });
		expect(result.error?.message).toMatch(message);
		expect(result.error?.description).toMatch(allowed);
		expect(sandbox.requests).toHaveLength(0);
	});

	it('names the item whose expression gives a wrong value, and sends nothing for the others', async () => {
		const result = await runNode(node, {
			credentials,
			items: [{ ratio: '16:9' }, { ratio: '21:9' }],
			parameters: generate({ additionalFields: { aspectRatio: '={{ $json.ratio }}' } }),
		});
		expect(result.error?.message).toMatch(/Aspect Ratio.*"21:9".*\[item 1\]/);
		expect(sandbox.requests).toHaveLength(0);
	});
});

describe('a failed video job', () => {
	it('is an error of the item that carries the reason the service gave', async () => {
		sandbox.failNextJobs(1, 'content policy: the prompt was refused');
		const result = await runNode(node, { credentials, parameters: generate() });
		expect(result.error?.message).toMatch(/failed: content policy: the prompt was refused \[item 0\]/);
		expect(result.error?.description).toMatch(/Code: generation_failed/);
		const [post] = videoPosts();
		expect(sandbox.chargesFor(post.headers['idempotency-key'])).toHaveLength(0);
	});

	it('is { error, code, status } on its own item with Continue On Fail, the other item kept', async () => {
		sandbox.failNextJobs(1, 'GPU out of memory');
		const result = await runNode(node, {
			credentials,
			continueOnFail: true,
			items: [{ n: 0 }, { n: 1 }],
			parameters: generate({ prompt: '={{ "clip " + $json.n }}', options: { concurrency: 1 } }),
		});
		expect(result.error).toBeUndefined();
		expect(result.items.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 1 }]);
		expect(result.items[0].json).toEqual({
			error: expect.stringMatching(/GPU out of memory \[item 0\]/),
			code: 'generation_failed',
			status: null,
		});
		expect(result.items[1].json.status).toBe('completed');
		expect(result.items[1].binary?.data.mimeType).toBe('video/mp4');
	});
});

describe('video getJob', () => {
	it('returns a queued job without binary, and the completed job with its MP4', async () => {
		sandbox.configure({ jobDurationMs: { video: 60_000 } });
		const long = await runNode(node, { credentials, parameters: generate({ waitForCompletion: false }) });
		sandbox.configure({ jobDurationMs: { video: 300 } });
		const longId = String(long.items[0].json.id);
		const queued = await runNode(node, { credentials, parameters: { operation: 'getJob', jobId: longId } });
		expect(queued.error).toBeUndefined();
		expect(queued.items[0].json).toEqual(sandbox.job(longId));
		expect(queued.items[0].json).toMatchObject({ id: longId, status: 'queued', estimated_cost: { micro: 300_000 } });
		expect(queued.items[0].binary).toBeUndefined();
		expect(sandbox.requestsTo('GET', '/files/')).toHaveLength(0);

		const submitted = await runNode(node, { credentials, parameters: generate({ waitForCompletion: false }) });
		const id = String(submitted.items[0].json.id);
		expect(submitted.items[0].json).toEqual({ id, status: 'queued', estimated_cost: { micro: 300_000, display: '$0.300000' } });
		await until(() => sandbox.job(id)?.status === 'completed');
		const done = await runNode(node, { credentials, parameters: { operation: 'getJob', jobId: id } });
		expect(done.items[0].json).toEqual(sandbox.job(id));
		const binary = done.items[0].binary!.data;
		expect(binary).toMatchObject({ mimeType: 'video/mp4', fileExtension: 'mp4', fileName: `${id}.mp4` });
		expect((await binaryBytes(binary)).equals(await servedBytes(String(done.items[0].json.url)))).toBe(true);
		expect(pollsOf(sandbox, id)).toHaveLength(1);
	});

	it('surfaces the service\'s 404 for an unknown job', async () => {
		const result = await runNode(node, { credentials, parameters: { operation: 'getJob', jobId: 'job_doesnotexist' } });
		expect(result.error?.httpCode).toBe('404');
		expect(result.error?.message).toMatch(/\[item 0\]$/);
		expect(result.error?.description).toMatch(/Code: not_found · HTTP status: 404/);
		expect(pollsOf(sandbox, 'job_doesnotexist')).toHaveLength(1);
	});

	it('refuses a job ID that is not one, before any request', async () => {
		const result = await runNode(node, { credentials, parameters: { operation: 'getJob', jobId: 'job 1/2' } });
		expect(result.error?.message).toMatch(/Job ID.*jobId.*"job 1\/2".*\[item 0\]/);
		expect(sandbox.requests).toHaveLength(0);
	});
});

describe('the video node in the editor', () => {
	it('offers exactly the spec\'s aspect ratios and resolutions (§4.2)', () => {
		const fields = node.description.properties.find((p) => p.name === 'additionalFields')!.options as Array<{
			name: string;
			options?: Array<{ value: string }>;
		}>;
		const values = (name: string) => fields.find((f) => f.name === name)!.options!.map((o) => o.value);
		expect(values('aspectRatio')).toEqual(['16:9', '9:16', '1:1']);
		expect(values('resolution')).toEqual(['720p', '1080p']);
		expect(fields.map((f) => f.name).sort()).toEqual(['aspectRatio', 'duration', 'image', 'modelParameters', 'resolution', 'webhookUrl']);
	});
});
