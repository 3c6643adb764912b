/**
 * The sandbox against the spec (shared/spec/generation-service-api.md), over real HTTP.
 * These tests keep the fake honest, so node tests built on it prove real behaviour.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { type Sandbox, startSandbox } from './sandbox';

let sb: Sandbox;

interface Reply {
	status: number;
	headers: Record<string, string | string[] | undefined>;
	text: string;
	json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function call(
	method: string,
	path: string,
	opts: { body?: unknown; key?: string | null; headers?: Record<string, string> } = {},
): Promise<Reply> {
	const key = opts.key === undefined ? sb.apiKey : opts.key;
	const headers: Record<string, string> = { ...opts.headers };
	if (key !== null) headers.authorization = `Bearer ${key}`;
	let body: string | undefined;
	if (opts.body !== undefined) {
		headers['content-type'] = 'application/json';
		body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
	}
	const res = await request(sb.baseUrl + path, { method: method as 'GET', headers, body });
	const text = await res.body.text();
	let json: unknown;
	try {
		json = text ? JSON.parse(text) : undefined;
	} catch {
		json = undefined;
	}
	return { status: res.statusCode, headers: res.headers, text, json };
}

const post = (
	path: string,
	body: unknown,
	opts: { key?: string | null; headers?: Record<string, string> } = {},
) => call('POST', path, { ...opts, body });
const get = (path: string, key?: string | null) => call('GET', path, { key });
const image = (body: Record<string, unknown> = {}, headers?: Record<string, string>) =>
	post(
		'/v1/generations/image',
		{ model: 'flux-pro', prompt: 'a lighthouse at dusk', ...body },
		{ headers },
	);

async function waitFor<T>(
	check: () => T | undefined | Promise<T | undefined>,
	timeoutMs = 5000,
): Promise<T> {
	const end = Date.now() + timeoutMs;
	for (;;) {
		const value = await check();
		if (value) return value;
		if (Date.now() > end) throw new Error('waitFor timed out');
		await new Promise((r) => setTimeout(r, 20));
	}
}

const waitForJob = (id: string) =>
	waitFor(() => {
		const job = sb.job(id);
		return job && (job.status === 'completed' || job.status === 'failed') ? job : undefined;
	});

beforeAll(async () => {
	sb = await startSandbox({ jobDurationMs: { video: 200, music: 200, voice: 200, threeD: 200 } });
});

afterAll(async () => {
	await sb.stop();
});

afterEach(() => {
	sb.clearFaults();
});

describe('authentication and scopes (§5)', () => {
	it('answers 401 for a missing, unknown or revoked key', async () => {
		const missing = await get('/v1/credits', null);
		expect(missing.status).toBe(401);
		expect(missing.json).toEqual({
			error: { code: 'unauthorized', message: expect.any(String), status: 401 },
		});
		expect((await get('/v1/credits', 'gs_test_' + '0'.repeat(40))).status).toBe(401);

		const created = await post('/v1/api-keys', { name: 'short-lived', scopes: ['credits:read'] });
		expect((await get('/v1/credits', created.json.key)).status).toBe(200);
		const deleted = await call('DELETE', `/v1/api-keys/${created.json.id}`);
		expect(deleted.status).toBe(204);
		expect(deleted.text).toBe('');
		expect((await get('/v1/credits', created.json.key)).status).toBe(401);
	});

	it('answers 403 naming the missing scope', async () => {
		const generateOnly = sb.createKey({ name: 'gen', scopes: ['generate'] });
		const credits = await get('/v1/credits', generateOnly.key);
		expect(credits.status).toBe(403);
		expect(credits.json.error.code).toBe('insufficient_scope');
		expect(credits.json.error.message).toContain('credits:read');
		expect((await get('/v1/usage/transactions', generateOnly.key)).status).toBe(403);

		const readOnly = sb.createKey({ name: 'read', scopes: ['credits:read'] });
		const gen = await post(
			'/v1/generations/image',
			{ model: 'flux-schnell', prompt: 'x' },
			{ key: readOnly.key },
		);
		expect(gen.status).toBe(403);
		expect(gen.json.error.message).toContain('generate');
		// Keys, voices, models and jobs take any valid key.
		for (const path of ['/v1/api-keys', '/v1/voices', '/v1/models'])
			expect((await get(path, readOnly.key)).status).toBe(200);
	});

	it('answers 404 for unknown routes and jobs, and records headers as received', async () => {
		const unknown = await get('/v1/nothing-here');
		expect(unknown.status).toBe(404);
		expect(unknown.json.error.code).toBe('not_found');
		expect((await get('/v1/jobs/job_missing')).status).toBe(404);
		await image({}, { 'Idempotency-Key': 'recorded-1' });
		const recorded = sb.requestsTo('POST', '/v1/generations/image').pop()!;
		expect(recorded.headers.authorization).toBe(`Bearer ${sb.apiKey}`);
		expect(recorded.headers['idempotency-key']).toBe('recorded-1');
		expect(recorded.body).toEqual({ model: 'flux-pro', prompt: 'a lighthouse at dusk' });
		expect(recorded.status).toBe(200);
	});
});

describe('image generation (§4.1) and billing', () => {
	it('returns the §2.1 result, records one charge and lowers the balance', async () => {
		const before = sb.balanceMicro();
		const res = await image({ aspect_ratio: '16:9', seed: 42 });
		expect(res.status).toBe(200);
		expect(res.headers['x-ratelimit-remaining']).toBeDefined();
		expect(res.json).toEqual({
			id: expect.stringMatching(/^gen_[0-9a-f]+$/),
			status: 'completed',
			url: `${sb.baseUrl}/files/${res.json.id}.png`,
			model: 'flux-pro',
			modality: 'image',
			cost: { micro: 48_000, display: '$0.048000', currency: 'USD' },
			metadata: { width: 1344, height: 768, seed: 42 },
		});
		const charge = sb.charges().pop()!;
		expect(charge).toMatchObject({
			id: res.json.id,
			type: 'generation',
			model: 'flux-pro',
			modality: 'image',
			cost: { micro: 48_000 },
		});
		expect(sb.balanceMicro()).toBe(before - 48_000);
		const credits = await get('/v1/credits');
		expect(credits.json.balance).toEqual({
			micro: before - 48_000,
			display: expect.stringMatching(/^\$\d+\.\d{6}$/),
			currency: 'USD',
		});
		expect(credits.json.caps).toEqual({
			organization: {
				micro: 1_000_000_000,
				display: '$1000.000000',
				used_micro: expect.any(Number),
			},
			project: null,
			key: null,
		});
	});

	it('serves the output file with its type and exact length', async () => {
		const png = await image({ image_size: '320x200' });
		const file = await request(png.json.url);
		const bytes = Buffer.from(await file.body.arrayBuffer());
		expect(file.statusCode).toBe(200);
		expect(file.headers['content-type']).toBe('image/png');
		expect(Number(file.headers['content-length'])).toBe(bytes.length);
		expect(bytes.subarray(1, 4).toString()).toBe('PNG');

		const jpeg = await image({ model: 'seedream-jpeg' });
		expect(jpeg.json.url).toMatch(/\.jpg$/);
		const jpegFile = await request(jpeg.json.url);
		expect(jpegFile.headers['content-type']).toBe('image/jpeg');
		const again = Buffer.from(await (await request(png.json.url)).body.arrayBuffer());
		expect(again.equals(bytes)).toBe(true); // the same URL always serves the same bytes
		await jpegFile.body.dump();
		expect((await request(`${sb.baseUrl}/files/gen_nothing.png`)).statusCode).toBe(404);
	});

	it.each([
		[{ model: undefined }, 'model'],
		[{ prompt: '' }, 'prompt'],
		[{ model: 'flux-nine' }, 'model'],
		[{ model: 'kling-2.1' }, 'model'],
		[{ aspect_ratio: '2:1' }, 'aspect_ratio'],
		[{ image_size: '1024*768' }, 'image_size'],
		[{ image_size: '5000x10' }, 'image_size'],
		[{ seed: 1.5 }, 'seed'],
		[{ image: 'https://example.com/a.png' }, 'image'],
		[{ confirm: 'no' }, 'confirm'],
	])('rejects %j with 400 naming %s', async (fields, field) => {
		const res = await image(fields);
		expect(res.status).toBe(400);
		expect(res.json.error).toEqual({
			code: 'invalid_request',
			message: expect.stringContaining(field),
			status: 400,
		});
	});

	it('accepts a source image on flux-kontext only, and rejects invalid JSON', async () => {
		expect(
			(await image({ model: 'flux-kontext', image: 'https://example.com/a.png' })).status,
		).toBe(200);
		const bad = await post('/v1/generations/image', '{"model": ');
		expect(bad.status).toBe(400);
		expect(bad.json.error.code).toBe('invalid_request');
	});

	it('confirm: false returns an estimate only, creates and charges nothing', async () => {
		const ledger = sb.transactions().length;
		const balance = sb.balanceMicro();
		const res = await post('/v1/generations/video', {
			model: 'kling-2.1',
			prompt: 'waves',
			duration: 4,
			resolution: '1080p',
			confirm: false,
		});
		expect(res.status).toBe(200);
		expect(res.json).toEqual({ estimated_cost: { micro: 360_000, display: '$0.360000' } });
		const voice = await post('/v1/generations/voice', {
			model: 'eleven-turbo',
			prompt: 'hi',
			confirm: false,
		});
		expect(voice.json).toEqual({ estimated_cost: { micro: 1_000, display: '$0.001000' } }); // minimum price
		expect(
			(
				await post('/v1/generations/video', {
					model: 'veo-3',
					prompt: 'x',
					duration: 9,
					confirm: false,
				})
			).status,
		).toBe(400);
		expect(sb.transactions()).toHaveLength(ledger);
		expect(sb.balanceMicro()).toBe(balance);
	});

	it('answers 402 insufficient_credits with the required and available amounts', async () => {
		const balance = sb.balanceMicro();
		sb.setBalance(10_000);
		try {
			const res = await image({}, { 'Idempotency-Key': 'poor-1' });
			expect(res.status).toBe(402);
			expect(res.json.error).toMatchObject({
				code: 'insufficient_credits',
				status: 402,
				required_micro: 48_000,
				available_micro: 10_000,
			});
			expect(res.json.error.message).toContain('$0.048000 (48000 microdollars)');
			expect(res.json.error.message).toContain('$0.010000 (10000 microdollars)');
		} finally {
			sb.setBalance(balance);
		}
		// A refused request is not stored: the same key succeeds once credits are there.
		expect((await image({}, { 'Idempotency-Key': 'poor-1' })).status).toBe(200);
		expect(sb.chargesFor('poor-1')).toHaveLength(1);
	});

	it('answers 402 spending_cap_reached with the cap details when a key cap is reached', async () => {
		const capped = sb.createKey({
			name: 'capped',
			scopes: ['generate', 'credits:read'],
			capTotalMicro: 50_000,
		});
		const gen = () =>
			post('/v1/generations/image', { model: 'flux-pro', prompt: 'x' }, { key: capped.key });
		expect((await gen()).status).toBe(200);
		const refused = await gen();
		expect(refused.status).toBe(402);
		expect(refused.json.error).toMatchObject({
			code: 'spending_cap_reached',
			status: 402,
			cap: {
				level: 'key',
				micro: 50_000,
				display: '$0.050000',
				used_micro: 48_000,
				required_micro: 48_000,
			},
		});
		const credits = await get('/v1/credits', capped.key);
		expect(credits.json.caps.key).toEqual({
			micro: 50_000,
			display: '$0.050000',
			used_micro: 48_000,
		});

		sb.setCap('project', 0);
		try {
			const project = await image();
			expect(project.json.error.cap.level).toBe('project');
		} finally {
			sb.setCap('project', null);
		}
	});
});

describe('idempotency (§7 rule 1)', () => {
	it('replays the first answer and charges once', async () => {
		const first = await image({}, { 'Idempotency-Key': 'idem-seq' });
		const second = await image({}, { 'Idempotency-Key': 'idem-seq' });
		expect(second.status).toBe(200);
		expect(second.json).toEqual(first.json);
		expect(sb.chargesFor('idem-seq')).toHaveLength(1);
		expect(sb.chargesFor('idem-seq')[0].id).toBe(first.json.id);
	});

	it('gives concurrent duplicates the same answer and charges once', async () => {
		const answers = await Promise.all(
			[1, 2, 3].map(() => image({}, { 'Idempotency-Key': 'idem-par' })),
		);
		expect(new Set(answers.map((a) => a.json.id)).size).toBe(1);
		expect(sb.chargesFor('idem-par')).toHaveLength(1);
	});

	it('keys are per API key', async () => {
		const other = sb.createKey({ name: 'other', scopes: ['generate'] });
		const a = await image({}, { 'Idempotency-Key': 'shared-name' });
		const b = await post(
			'/v1/generations/image',
			{ model: 'flux-pro', prompt: 'x' },
			{ key: other.key, headers: { 'Idempotency-Key': 'shared-name' } },
		);
		expect(b.json.id).not.toBe(a.json.id);
		expect(sb.chargesFor('shared-name')).toHaveLength(2);
	});
});

describe('async jobs (§3, §4.2, §4.3, §4.6) and webhooks (§6)', () => {
	let hook: Server;
	let hookUrl: string;
	const received: Array<{ body: any; headers: IncomingMessage['headers'] }> = []; // eslint-disable-line @typescript-eslint/no-explicit-any

	beforeAll(async () => {
		hook = createServer((req, res) => {
			let text = '';
			req.on('data', (c) => (text += c));
			req.on('end', () => {
				received.push({ body: JSON.parse(text), headers: req.headers });
				res.end('ok');
			});
		});
		await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
		hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
	});

	afterAll(async () => {
		hook.closeAllConnections();
		await new Promise((r) => hook.close(r));
	});

	it('runs a video job queued → completed, charges on completion and POSTs the job body to webhook_url', async () => {
		const submit = await post('/v1/generations/video', {
			model: 'kling-2.1',
			prompt: 'a fox',
			webhook_url: hookUrl,
		});
		expect(submit.status).toBe(200);
		expect(submit.json).toEqual({
			id: expect.stringMatching(/^job_/),
			status: 'queued',
			estimated_cost: { micro: 300_000, display: '$0.300000' },
		});
		const id = submit.json.id;
		const queued = await get(`/v1/jobs/${id}`);
		expect(queued.json).toEqual({
			id,
			status: 'queued',
			model: 'kling-2.1',
			modality: 'video',
			estimated_cost: { micro: 300_000, display: '$0.300000' },
			created_at: expect.any(String),
		});
		expect(sb.charges().some((c) => c.id === id)).toBe(false);

		await waitFor(() => received.find((r) => r.body.id === id));
		const done = await get(`/v1/jobs/${id}`);
		expect(done.json).toEqual({
			id,
			status: 'completed',
			model: 'kling-2.1',
			modality: 'video',
			url: `${sb.baseUrl}/files/${id}.mp4`,
			cost: { micro: 300_000, display: '$0.300000', currency: 'USD' },
			metadata: { duration: 5, width: 1280, height: 720, fps: 25 },
			created_at: expect.any(String),
			completed_at: expect.any(String),
		});
		const delivery = received.find((r) => r.body.id === id)!;
		expect(delivery.body).toEqual(done.json);
		expect(delivery.headers['content-type']).toBe('application/json');
		await waitFor(() => sb.webhookDeliveries.find((d) => d.jobId === id));
		expect(sb.webhookDeliveries.find((d) => d.jobId === id)).toMatchObject({
			url: hookUrl,
			status: 200,
		});
		expect(sb.charges().filter((c) => c.id === id)).toHaveLength(1);

		const times = sb.jobTimes(id)!;
		expect(times.startedAt).toBeGreaterThan(times.submittedAt);
		expect(times.finishedAt).toBeGreaterThan(times.startedAt!);

		const file = await request(done.json.url);
		expect(file.headers['content-type']).toBe('video/mp4');
		expect(Number(file.headers['content-length'])).toBe((await file.body.arrayBuffer()).byteLength);

		await sb.redeliver(id);
		expect(received.filter((r) => r.body.id === id)).toHaveLength(2);
	});

	it('ends failed jobs with the reason, a webhook, and no charge', async () => {
		sb.failNextJobs(1, 'GPU melted');
		const first = await post('/v1/generations/music', {
			model: 'suno-v4',
			prompt: 'jazz',
			webhook_url: hookUrl,
		});
		const second = await post('/v1/generations/music', {
			model: 'suno-v4',
			prompt: 'jazz [sandbox:fail]',
		});
		const third = await post('/v1/generations/music', {
			model: 'suno-v4',
			prompt: '[Verse] night city lights',
			duration: 30,
		});
		const [a, b, c] = await Promise.all([first, second, third].map((r) => waitForJob(r.json.id)));
		expect(a).toEqual({
			id: first.json.id,
			status: 'failed',
			model: 'suno-v4',
			modality: 'music',
			error: { code: 'generation_failed', message: 'GPU melted' },
			created_at: expect.any(String),
			completed_at: expect.any(String),
		});
		expect((b.error as { message: string }).message).toContain('[sandbox:fail]');
		expect(c).toMatchObject({
			status: 'completed',
			cost: { micro: 18_000 },
			metadata: { duration: 30, title: 'Night City Lights', sample_rate: 44_100 },
		});
		await waitFor(() => received.find((r) => r.body.id === first.json.id));
		expect(received.find((r) => r.body.id === first.json.id)!.body.status).toBe('failed');
		expect(sb.charges().some((t) => t.id === first.json.id || t.id === second.json.id)).toBe(false);
	});

	it('runs jobs concurrently', async () => {
		sb.configure({ jobDurationMs: { music: 300 } });
		const ids = await Promise.all(
			[1, 2, 3, 4].map(
				async () =>
					(await post('/v1/generations/music', { model: 'udio-long', prompt: 'ambient' })).json
						.id as string,
			),
		);
		await Promise.all(ids.map(waitForJob));
		const times = ids.map((id) => sb.jobTimes(id)!);
		// Every job was submitted before any finished: their run times overlap.
		expect(Math.max(...times.map((t) => t.submittedAt))).toBeLessThan(
			Math.min(...times.map((t) => t.finishedAt!)),
		);
		sb.configure({ jobDurationMs: { music: 200 } });
	});

	it('answers short voice synchronously and long voice as a job (§4.4)', async () => {
		const short = await post('/v1/generations/voice', {
			model: 'eleven-turbo',
			prompt: 'Hello there, world!',
			voice: 'aria',
			speed: 1.5,
		});
		expect(short.json).toEqual({
			id: expect.stringMatching(/^gen_/),
			status: 'completed',
			url: expect.stringMatching(/\.mp3$/),
			model: 'eleven-turbo',
			modality: 'voice',
			cost: { credits_used: 1_000, estimated_credits: 1_000, currency: 'microdollars' },
			metadata: { duration: expect.any(Number), sample_rate: 44_100, voice: 'aria' },
		});
		const audio = await request(short.json.url);
		expect(audio.headers['content-type']).toBe('audio/mpeg');
		await audio.body.dump();

		const long = await post('/v1/generations/voice', {
			model: 'eleven-turbo',
			prompt: 'a'.repeat(1_001),
		});
		expect(long.json).toEqual({
			id: expect.stringMatching(/^job_/),
			status: 'queued',
			estimated_cost: { micro: 30_030, display: '$0.030030' },
		});
		const done = await waitForJob(long.json.id);
		expect(done).toMatchObject({
			status: 'completed',
			modality: 'voice',
			cost: { credits_used: 30_030, estimated_credits: 30_030, currency: 'microdollars' },
			metadata: { voice: 'alloy', sample_rate: 44_100 },
		});

		for (const [fields, field] of [
			[{ speed: 3 }, 'speed'],
			[{ voice: 'nobody' }, 'voice'],
			[{ emotion: 'angry' }, 'emotion'],
			[{ ref_audio_url: 'https://example.com/me.wav' }, 'ref_audio_url'],
		] as const) {
			const res = await post('/v1/generations/voice', {
				model: 'eleven-turbo',
				prompt: 'hi',
				...fields,
			});
			expect(res.status).toBe(400);
			expect(res.json.error.message).toContain(field);
		}
		const clone = await post('/v1/generations/voice', {
			model: 'xtts-clone',
			prompt: 'hi',
			ref_audio_url: 'https://example.com/me.wav',
		});
		expect(clone.status).toBe(200);
		const voices = await get('/v1/voices');
		expect(voices.json).toHaveLength(6);
		expect(voices.json[0]).toEqual({
			name: 'alloy',
			language: expect.any(String),
			gender: expect.any(String),
			preview_url: `${sb.baseUrl}/files/voice_alloy.mp3`,
		});
	});

	it('runs 3D as a job with a GLB output (§4.5)', async () => {
		const submit = await post('/v1/generations/threeD', {
			model: 'trellis',
			prompt: 'a chair',
			texture_size: 1024,
		});
		expect(submit.json.status).toBe('queued');
		const done = await waitForJob(submit.json.id);
		expect(done).toMatchObject({
			status: 'completed',
			modality: 'threeD',
			url: expect.stringMatching(/\.glb$/),
			cost: { micro: 60_000, currency: 'USD' },
		});
		const file = await request(done.url as string);
		expect(file.headers['content-type']).toBe('model/gltf-binary');
		expect(
			Buffer.from(await file.body.arrayBuffer())
				.subarray(0, 4)
				.toString(),
		).toBe('glTF');
	});

	it('lists models with pricing', async () => {
		const models = await get('/v1/models');
		const ids = models.json.models.map((m: { id: string }) => m.id);
		expect(ids).toEqual(
			expect.arrayContaining([
				'flux-schnell',
				'flux-pro',
				'seedream-jpeg',
				'flux-kontext',
				'kling-2.1',
				'veo-3',
				'suno-v4',
				'udio-long',
				'eleven-turbo',
				'xtts-clone',
				'trellis',
				'hunyuan3d',
			]),
		);
		const veo = models.json.models.find((m: { id: string }) => m.id === 'veo-3');
		expect(veo).toMatchObject({
			modality: 'video',
			pricing: { unit: 'second', micro: 480_000, display: '$0.480000' },
			capabilities: expect.any(Array),
			parameters: expect.any(Object),
		});
	});
});

describe('faults', () => {
	it('status: answers the error with Retry-After, processes nothing', async () => {
		const ledger = sb.transactions().length;
		sb.fault({ path: '/v1/generations/image', kind: 'status', status: 503, retryAfter: '2' });
		const res = await image();
		expect(res.status).toBe(503);
		expect(res.headers['retry-after']).toBe('2');
		expect(res.json.error).toMatchObject({ code: 'server_error', status: 503 });
		expect(sb.transactions()).toHaveLength(ledger);
		expect((await image()).status).toBe(200); // count defaults to 1
		expect(
			sb
				.requestsTo('POST', '/v1/generations/image')
				.slice(-2)
				.map((r) => [r.status, r.fault]),
		).toEqual([
			[503, 'status'],
			[200, undefined],
		]);
	});

	it("reset 'after': the charge is recorded once although the answer broke; the retry replays it", async () => {
		sb.fault({ path: '/v1/generations/image', kind: 'reset' });
		await expect(image({}, { 'Idempotency-Key': 'reset-after' })).rejects.toThrow();
		expect(sb.chargesFor('reset-after')).toHaveLength(1);
		const retry = await image({}, { 'Idempotency-Key': 'reset-after' });
		expect(retry.status).toBe(200);
		expect(retry.json.id).toBe(sb.chargesFor('reset-after')[0].id);
		expect(sb.chargesFor('reset-after')).toHaveLength(1);
		const broken = sb.requestsTo('POST', '/v1/generations/image').slice(-2)[0];
		expect([broken.fault, broken.status]).toEqual(['reset', undefined]);
	});

	it("reset 'before' processes nothing", async () => {
		sb.fault({ path: '/v1/generations/image', kind: 'reset', when: 'before' });
		await expect(image({}, { 'Idempotency-Key': 'reset-before' })).rejects.toThrow();
		expect(sb.chargesFor('reset-before')).toHaveLength(0);
	});

	it('malformed: 200 with a truncated JSON body, processed', async () => {
		sb.fault({ path: '/v1/generations/image', kind: 'malformed' });
		const res = await image({}, { 'Idempotency-Key': 'malformed-1' });
		expect(res.status).toBe(200);
		expect(res.headers['content-type']).toBe('application/json');
		expect(() => JSON.parse(res.text)).toThrow();
		expect(sb.chargesFor('malformed-1')).toHaveLength(1);
	});

	it('stall with stallMs: the answer comes late but whole', async () => {
		sb.fault({ path: '/v1/credits', kind: 'stall', stallMs: 300 });
		const started = Date.now();
		const res = await get('/v1/credits');
		expect(res.status).toBe(200);
		expect(Date.now() - started).toBeGreaterThanOrEqual(280);
	});

	it('reset on /files/: headers and part of the body, then the connection drops', async () => {
		sb.configure({ outputSizeBytes: { image: 1_000_000 } });
		const res = await image();
		sb.configure({ outputSizeBytes: { image: undefined } });
		sb.fault({ path: '/files/', kind: 'reset' });
		const file = await request(res.json.url);
		expect(file.statusCode).toBe(200);
		expect(Number(file.headers['content-length'])).toBeGreaterThanOrEqual(1_000_000);
		await expect(file.body.arrayBuffer()).rejects.toThrow();
		const whole = await request(res.json.url);
		expect((await whole.body.arrayBuffer()).byteLength).toBe(
			Number(whole.headers['content-length']),
		);
	});

	it('stall without stallMs never answers; stop() still ends cleanly with jobs and stalls pending', async () => {
		const other = await startSandbox({ jobDurationMs: { video: 60_000 } });
		other.fault({ path: '/v1/credits', kind: 'stall' });
		const auth = { authorization: `Bearer ${other.apiKey}` };
		const job = await request(`${other.baseUrl}/v1/generations/video`, {
			method: 'POST',
			headers: { ...auth, 'content-type': 'application/json' },
			body: JSON.stringify({ model: 'veo-3', prompt: 'x' }),
		});
		await job.body.dump();
		const stalled = request(`${other.baseUrl}/v1/credits`, { headers: auth });
		await waitFor(() => other.requestsTo('GET', '/v1/credits').length === 1);
		const started = Date.now();
		await other.stop();
		await expect(stalled).rejects.toThrow();
		expect(Date.now() - started).toBeLessThan(1000);
		expect(other.requestsTo('GET', '/v1/credits')[0]).toMatchObject({ fault: 'stall' });
	});

	it('is controllable over HTTP (/_sandbox), which is not recorded', async () => {
		const count = sb.requests.length;
		const added = await request(`${sb.baseUrl}/_sandbox/faults`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify({ path: '/v1/voices', kind: 'status', status: 429, retryAfter: '1' }),
		});
		await added.body.dump();
		const state = await request(`${sb.baseUrl}/_sandbox/state`);
		const body = (await state.body.json()) as {
			apiKey: string;
			balanceMicro: number;
			requestCount: number;
		};
		expect(body).toMatchObject({
			apiKey: sb.apiKey,
			balanceMicro: sb.balanceMicro(),
			requestCount: count,
		});
		const limited = await get('/v1/voices');
		expect(limited.status).toBe(429);
		expect(limited.json.error.code).toBe('rate_limited');
		expect(limited.headers['x-ratelimit-remaining']).toBe('0');
		expect(sb.requests.length).toBe(count + 1);
	});
});

describe('rate limit (§8)', () => {
	it('counts per key in a one-minute window and answers 429 with Retry-After', async () => {
		const key = sb.createKey({ name: 'limited', scopes: ['credits:read'] }).key;
		sb.configure({ rateLimitPerMinute: 3 });
		try {
			const remaining: unknown[] = [];
			for (let i = 0; i < 3; i++)
				remaining.push((await get('/v1/credits', key)).headers['x-ratelimit-remaining']);
			expect(remaining).toEqual(['2', '1', '0']);
			const limited = await get('/v1/credits', key);
			expect(limited.status).toBe(429);
			expect(limited.json.error.code).toBe('rate_limited');
			expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
			expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
			expect(limited.headers['x-ratelimit-remaining']).toBe('0');
		} finally {
			sb.configure({ rateLimitPerMinute: 600 });
		}
	});
});

describe('ledger and usage (§4.12–§4.14)', () => {
	it('pages through transactions newest first, equal to the ledger', async () => {
		sb.seedHistory({ count: 45, days: 10 });
		const ids: string[] = [];
		let cursor: string | null = null;
		let pages = 0;
		do {
			const res: Reply = await get(
				`/v1/usage/transactions?limit=10${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
			);
			expect(res.status).toBe(200);
			ids.push(...res.json.transactions.map((t: { id: string }) => t.id));
			expect(res.json.cursor === null).toBe(!res.json.has_more);
			cursor = res.json.cursor;
			pages++;
		} while (cursor);
		expect(pages).toBeGreaterThanOrEqual(3);
		expect(ids).toEqual(sb.transactions().map((t) => t.id));

		const first = (await get('/v1/usage/transactions')).json;
		expect(first.transactions).toHaveLength(20);
		expect(first.transactions[0]).not.toHaveProperty('key_id');
		const topUps = (await get('/v1/usage/transactions?type=top_up')).json.transactions;
		expect(topUps.length).toBeGreaterThanOrEqual(1);
		expect(
			topUps.every(
				(t: { type: string; cost: { micro: number } }) => t.type === 'top_up' && t.cost.micro < 0,
			),
		).toBe(true);
		const videos = (await get('/v1/usage/transactions?modality=video&limit=100')).json.transactions;
		expect(videos.every((t: { modality: string }) => t.modality === 'video')).toBe(true);
		for (const query of [
			'limit=0',
			'limit=101',
			'limit=abc',
			'cursor=nonsense',
			'type=gift',
			'modality=smell',
		]) {
			expect((await get(`/v1/usage/transactions?${query}`)).status).toBe(400);
		}
	});

	it('sums usage and daily usage over the seeded days', async () => {
		const seeded = sb.seedHistory({ count: 20, days: 5, endDate: '2024-03-10' });
		const total = seeded.reduce((s, t) => s + t.cost.micro, 0);
		const summary = (await get('/v1/usage?from=2024-03-06&to=2024-03-10')).json;
		expect(summary).toMatchObject({
			from: '2024-03-06',
			to: '2024-03-10',
			total_cost: { micro: total, currency: 'USD' },
			generation_count: 20,
		});
		const byModality = summary.by_modality.reduce(
			(s: number, m: { cost: { micro: number } }) => s + m.cost.micro,
			0,
		);
		const byModel = summary.by_model.reduce((s: number, m: { count: number }) => s + m.count, 0);
		expect(byModality).toBe(total);
		expect(byModel).toBe(20);

		const daily = (await get('/v1/usage/daily?from=2024-03-01&to=2024-03-12')).json.days;
		expect(daily).toHaveLength(12);
		expect(daily[0]).toEqual({
			date: '2024-03-01',
			count: 0,
			cost: { micro: 0, display: '$0.000000' },
		});
		expect(daily.reduce((s: number, d: { cost: { micro: number } }) => s + d.cost.micro, 0)).toBe(
			total,
		);
		expect(
			daily.filter((d: { count: number }) => d.count > 0).map((d: { date: string }) => d.date),
		).toEqual(['2024-03-06', '2024-03-07', '2024-03-08', '2024-03-09', '2024-03-10']);

		const byKey = (await get(`/v1/usage?from=2024-03-06&to=2024-03-10&key_id=key_nobody`)).json;
		expect(byKey.generation_count).toBe(0);
		for (const query of [
			'',
			'from=2024-03-06',
			'from=2024-03-10&to=2024-03-06',
			'from=2024-02-30&to=2024-03-01',
			'from=03/06/2024&to=2024-03-10',
		]) {
			expect((await get(`/v1/usage?${query}`)).status).toBe(400);
		}
		expect((await get('/v1/usage/daily?to=2024-03-10')).status).toBe(400);
	});

	it('records top-ups (negative) and refunds in the ledger', async () => {
		const before = sb.balanceMicro();
		const top = sb.topUp(5_000_000);
		expect(top).toMatchObject({
			type: 'top_up',
			cost: { micro: -5_000_000, display: '-$5.000000' },
			status: 'completed',
		});
		const gen = await image();
		const refund = sb.refund(gen.json.id);
		expect(refund).toMatchObject({ type: 'refund', cost: { micro: -48_000 } });
		expect(sb.balanceMicro()).toBe(before + 5_000_000);
		expect(sb.transactions()[0].id).toBe(refund.id);
	});
});

describe('API keys (§4.9–§4.11)', () => {
	it('creates, lists (prefix only) and deletes keys', async () => {
		const created = await post('/v1/api-keys', {
			name: 'ci',
			scopes: ['generate', 'credits:read'],
			cap_total_micro: 2_000_000,
		});
		expect(created.status).toBe(200);
		expect(created.json).toEqual({
			id: expect.stringMatching(/^key_/),
			name: 'ci',
			key: expect.stringMatching(/^gs_test_[0-9a-f]{40}$/),
			scopes: ['generate', 'credits:read'],
			cap_total_micro: 2_000_000,
			created_at: expect.any(String),
		});
		await get('/v1/credits', created.json.key);
		const list = await get('/v1/api-keys');
		expect(list.text).not.toContain(created.json.key);
		expect(list.text).not.toContain(sb.apiKey);
		const item = list.json.keys.find((k: { id: string }) => k.id === created.json.id);
		expect(item).toEqual({
			id: created.json.id,
			name: 'ci',
			prefix: created.json.key.slice(0, 12),
			scopes: ['generate', 'credits:read'],
			cap_total_micro: 2_000_000,
			created_at: created.json.created_at,
			last_used_at: expect.any(String),
		});

		expect((await call('DELETE', `/v1/api-keys/${created.json.id}`)).status).toBe(204);
		expect((await call('DELETE', `/v1/api-keys/${created.json.id}`)).status).toBe(404);
		const after = await get('/v1/api-keys');
		expect(after.json.keys.some((k: { id: string }) => k.id === created.json.id)).toBe(false);

		for (const body of [
			{ scopes: ['generate'] },
			{ name: 'x', scopes: [] },
			{ name: 'x', scopes: ['admin'] },
			{ name: 'x', scopes: ['generate'], cap_total_micro: -1 },
		]) {
			const res = await post('/v1/api-keys', body);
			expect(res.status).toBe(400);
		}
	});
});
