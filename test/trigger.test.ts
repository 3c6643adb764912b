import { initEngine, runNode, shutdownEngine } from './helpers/engine';
import type { TriggerEndpoint } from './helpers/webhook';
import { serveTrigger } from './helpers/webhook';

import type { INodeParameters } from 'n8n-workflow';
import { request } from 'undici';

import { GenerationServiceTrigger } from '../nodes/GenerationServiceTrigger/GenerationServiceTrigger.node';
import { GenerationServiceVideo } from '../nodes/GenerationServiceVideo/GenerationServiceVideo.node';
import type { Sandbox } from './sandbox';
import { startSandbox } from './sandbox';

const trigger = new GenerationServiceTrigger();
let sandbox: Sandbox;
const endpoints: TriggerEndpoint[] = [];

beforeAll(async () => {
	await initEngine('default');
	sandbox = await startSandbox({ jobDurationMs: { video: 300, music: 300 } });
});
afterAll(async () => {
	await Promise.all(endpoints.map(async (endpoint) => endpoint.stop()));
	await sandbox.stop();
	await shutdownEngine();
});

async function endpoint(parameters: INodeParameters, staticData?: Record<string, unknown>) {
	const served = await serveTrigger(trigger, parameters, { staticData: staticData as never });
	endpoints.push(served);
	return served;
}

/** Submits a job to the sandbox as the Video or Music node would, with `webhook_url`. */
async function submitJob(webhookUrl: string, modality: 'video' | 'music' = 'video', prompt = 'A slow pan over a harbour') {
	const body =
		modality === 'video'
			? { model: 'kling-2.1', prompt, duration: 3, webhook_url: webhookUrl }
			: { model: 'suno-v4', prompt, duration: 10, webhook_url: webhookUrl };
	const response = await request(`${sandbox.baseUrl}/v1/generations/${modality}`, {
		method: 'POST',
		headers: { authorization: `Bearer ${sandbox.apiKey}`, 'content-type': 'application/json' },
		body: JSON.stringify(body),
	});
	const job = (await response.body.json()) as { id: string; status: string };
	expect(response.statusCode).toBe(200);
	expect(job.status).toBe('queued');
	return job.id;
}

/** GET /v1/jobs/:id: the body §6 says the webhook carries. */
async function jobBody(id: string) {
	const response = await request(`${sandbox.baseUrl}/v1/jobs/${id}`, {
		headers: { authorization: `Bearer ${sandbox.apiKey}` },
	});
	return (await response.body.json()) as Record<string, unknown>;
}

/** A POST straight to the endpoint, for bodies and headers the sandbox never sends. */
async function post(url: string, body: string, headers: Record<string, string> = {}) {
	const response = await request(url, {
		method: 'POST',
		headers: { 'content-type': 'application/json', ...headers },
		body,
	});
	return { status: response.statusCode, answer: await response.body.json() };
}

/** The sandbox records a delivery once it has read the whole answer. */
async function deliveryOf(jobId: string, count = 1) {
	while (sandbox.webhookDeliveries.filter((d) => d.jobId === jobId).length < count) {
		await new Promise((resolve) => setImmediate(resolve));
	}
	return sandbox.webhookDeliveries.filter((d) => d.jobId === jobId);
}

const finishedJob = (id: string, status = 'completed') => ({ id, status, model: 'kling-2.1', modality: 'video' });

describe('the node description', () => {
	it('is a POST webhook at path "webhook" answered on receipt, with no inputs and not a tool', () => {
		const { description } = trigger;
		expect(description.name).toBe('generationServiceTrigger');
		expect(description.webhooks).toEqual([
			{ name: 'default', httpMethod: 'POST', responseMode: 'onReceived', responseData: 'noData', path: 'webhook' },
		]);
		expect(description.inputs).toEqual([]);
		expect(description.outputs).toEqual(['main']);
		expect(description.usableAsTool).toBeUndefined();
		expect(description.credentials).toBeUndefined();
		const notice = description.properties.find((p) => p.type === 'notice');
		expect(notice?.displayName).toMatch(/Production URL.*Webhook URL.*Video or Music.*\?token=.*X-Webhook-Token/s);
		const token = description.properties.find((p) => p.name === 'options')?.options?.[0];
		expect(token).toMatchObject({ name: 'token', typeOptions: { password: true } });
	});
});

describe('a delivery from a sandbox job', () => {
	it('starts one execution whose output is the job body', async () => {
		const served = await endpoint({ events: ['completed', 'failed'], modalities: [], options: { token: 's3cret' } });
		const jobId = await submitJob(`${served.url}?token=s3cret`);
		await served.handledCount(1);

		expect(served.handled[0]).toMatchObject({ status: 200, answer: { message: 'Workflow was started' } });
		const body = await jobBody(jobId);
		expect(body).toMatchObject({ id: jobId, status: 'completed', modality: 'video' });
		expect(served.executions()).toHaveLength(1);
		const [items] = served.executions();
		expect(items).toHaveLength(1);
		expect(items[0].json).toEqual(body);
		expect(await deliveryOf(jobId)).toEqual([expect.objectContaining({ status: 200 })]);
	});

	it('arrives from a job that the Video node submitted with its Webhook URL field', async () => {
		const served = await endpoint({ events: ['completed', 'failed'], options: { token: 'from-video' } });
		const submitted = await runNode(new GenerationServiceVideo(), {
			credentials: { apiKey: sandbox.apiKey, baseUrl: sandbox.baseUrl },
			parameters: {
				operation: 'generate',
				model: { __rl: true, mode: 'id', value: 'kling-2.1' },
				prompt: 'Waves at night',
				waitForCompletion: false,
				download: false,
				additionalFields: { duration: 3, webhookUrl: `${served.url}?token=from-video` },
			},
		});
		expect(submitted.error).toBeUndefined();
		const jobId = String(submitted.items[0].json.id);
		expect(sandbox.requestsTo('POST', '/v1/generations/video').at(-1)?.body).toMatchObject({
			webhook_url: `${served.url}?token=from-video`,
		});
		await served.handledCount(1);
		expect(served.executions()).toEqual([[expect.objectContaining({ json: await jobBody(jobId) })]]);
	});

	it('also starts one for a failed job, whose body carries the failure', async () => {
		const served = await endpoint({ events: ['failed'], modalities: ['music'] });
		sandbox.failNextJobs(1, 'the model is overloaded');
		const jobId = await submitJob(served.url, 'music');
		await served.handledCount(1);
		const [items] = served.executions();
		expect(items.map((item) => item.json)).toEqual([await jobBody(jobId)]);
		expect(items[0].json).toMatchObject({ status: 'failed', error: { message: 'the model is overloaded' } });
	});
});

describe('the token', () => {
	it('refuses a job delivered with the wrong token with 401, and starts nothing', async () => {
		const served = await endpoint({ events: ['completed', 'failed'], options: { token: 's3cret' } });
		const jobId = await submitJob(`${served.url}?token=guess`);
		await served.handledCount(1);
		expect(served.handled[0]).toMatchObject({ status: 401, answer: { message: expect.stringMatching(/Unauthorized/) } });
		expect(served.executions()).toHaveLength(0);
		expect(await deliveryOf(jobId)).toEqual([expect.objectContaining({ status: 401 })]);
	});

	it('is required when set: no token, a token of another length, and an empty one are refused', async () => {
		const served = await endpoint({ events: ['completed', 'failed'], options: { token: 's3cret' } });
		const body = JSON.stringify(finishedJob('job_token_check'));
		expect((await post(served.url, body)).status).toBe(401);
		expect((await post(`${served.url}?token=s3cret-and-more`, body)).status).toBe(401);
		expect((await post(`${served.url}?token=`, body)).status).toBe(401);
		expect((await post(served.url, body, { 'x-webhook-token': 'S3CRET' })).status).toBe(401);
		expect(served.executions()).toHaveLength(0);
		expect(served.savedStaticData()).toEqual({});
	});

	it('is accepted in the X-Webhook-Token header too', async () => {
		const served = await endpoint({ events: ['completed', 'failed'], options: { token: 's3cret' } });
		const result = await post(served.url, JSON.stringify(finishedJob('job_header_token')), { 'x-webhook-token': 's3cret' });
		expect(result).toEqual({ status: 200, answer: { message: 'Workflow was started' } });
		expect(served.executions()[0][0].json).toEqual(finishedJob('job_header_token'));
	});

	it('is not asked for when the option is empty', async () => {
		const served = await endpoint({ events: ['completed', 'failed'], options: {} });
		expect((await post(served.url, JSON.stringify(finishedJob('job_open')))).status).toBe(200);
		expect(served.executions()).toHaveLength(1);
	});
});

describe('a body that is not a finished job', () => {
	it.each([
		['an empty object', '{}'],
		['an id that is not a string', '{"id": 42, "status": "completed"}'],
		['no status', '{"id": "job_1"}'],
		['a job still queued', '{"id": "job_1", "status": "queued"}'],
		['a job still processing', '{"id": "job_1", "status": "processing"}'],
		['an array of jobs', '[{"id": "job_1", "status": "completed"}]'],
		['a JSON string', '"job_1 completed"'],
		['null', 'null'],
	])('gets 400 and starts nothing: %s', async (_label, body) => {
		const served = await endpoint({ events: ['completed', 'failed'] });
		const result = await post(served.url, body);
		expect(result.status).toBe(400);
		expect(result.answer).toEqual({ message: expect.stringMatching(/finished job.*"id".*"status"/) });
		expect(served.executions()).toHaveLength(0);
	});

	it('gets 400 when it is not JSON at all', async () => {
		const served = await endpoint({ events: ['completed', 'failed'] });
		const result = await post(served.url, 'job_1 completed', { 'content-type': 'text/plain' });
		expect(result.status).toBe(400);
		expect(served.executions()).toHaveLength(0);
	});

	it('is refused after the token check: a wrong token gets 401 whatever the body', async () => {
		const served = await endpoint({ events: ['completed', 'failed'], options: { token: 's3cret' } });
		expect((await post(`${served.url}?token=nope`, '{}')).status).toBe(401);
	});
});

describe('filters', () => {
	it('answer 200 and start nothing for an event that is not selected', async () => {
		const served = await endpoint({ events: ['completed'], modalities: [] });
		sandbox.failNextJobs(1);
		const jobId = await submitJob(served.url);
		await served.handledCount(1);
		expect(served.handled[0]).toEqual({
			status: 200,
			answer: { message: 'Received; failed jobs are not selected in Events' },
		});
		expect(served.executions()).toHaveLength(0);
		expect(await deliveryOf(jobId)).toEqual([expect.objectContaining({ status: 200 })]);
	});

	it('answer 200 and start nothing for a modality that is not selected', async () => {
		const served = await endpoint({ events: ['completed', 'failed'], modalities: ['music', 'threeD'] });
		await submitJob(served.url, 'video');
		await submitJob(served.url, 'music');
		await served.handledCount(2);
		expect(served.handled.map((h) => h.status)).toEqual([200, 200]);
		expect(served.executions()).toHaveLength(1);
		expect(served.executions()[0][0].json).toMatchObject({ modality: 'music', status: 'completed' });
	});

	it('let every event through when an expression leaves Events empty', async () => {
		// The editor requires Events; only an expression can make it empty.
		const served = await endpoint({ events: '={{ [] }}' });
		expect((await post(served.url, JSON.stringify(finishedJob('job_f1', 'failed')))).status).toBe(200);
		expect(served.executions()).toHaveLength(1);
	});
});

describe('redelivery', () => {
	it('of the same job and status is answered 200 and starts no second execution', async () => {
		const served = await endpoint({ events: ['completed', 'failed'] });
		const jobId = await submitJob(served.url);
		await served.handledCount(1);
		await sandbox.redeliver(jobId);
		await sandbox.redeliver(jobId);
		await served.handledCount(3);

		expect(served.handled.map((h) => h.status)).toEqual([200, 200, 200]);
		expect(served.handled[1].answer).toEqual({ message: 'Received; this job result was already delivered' });
		expect(served.executions()).toHaveLength(1);
		expect((await deliveryOf(jobId, 3)).map((d) => d.status)).toEqual([200, 200, 200]);
		// Remembered in the workflow's static data, which n8n saves between deliveries.
		expect(served.savedStaticData()).toEqual({ 'node:Generation Service Trigger': { deliveries: [`${jobId}:completed`] } });
	});

	it('with another status is a new event', async () => {
		const served = await endpoint({ events: ['completed', 'failed'] });
		await post(served.url, JSON.stringify(finishedJob('job_r1', 'failed')));
		await post(served.url, JSON.stringify(finishedJob('job_r1', 'completed')));
		await post(served.url, JSON.stringify(finishedJob('job_r1', 'completed')));
		expect(served.executions().map(([item]) => item.json.status)).toEqual(['failed', 'completed']);
	});

	it('is recognised within the last 1000 deliveries, which is all that is kept', async () => {
		const remembered = Array.from({ length: 1000 }, (_, i) => `job_old${i}:completed`);
		const served = await endpoint(
			{ events: ['completed', 'failed'] },
			{ 'node:Generation Service Trigger': { deliveries: remembered } },
		);
		// The newest remembered one is a duplicate.
		await post(served.url, JSON.stringify(finishedJob('job_old999')));
		expect(served.executions()).toHaveLength(0);
		// A new one is accepted and pushes the oldest out of the list...
		await post(served.url, JSON.stringify(finishedJob('job_new')));
		const { deliveries } = served.savedStaticData()['node:Generation Service Trigger'] as { deliveries: string[] };
		expect(deliveries).toHaveLength(1000);
		expect(deliveries[0]).toBe('job_old1:completed');
		expect(deliveries[999]).toBe('job_new:completed');
		// ...so that one is now treated as new.
		await post(served.url, JSON.stringify(finishedJob('job_old0')));
		expect(served.executions().map(([item]) => item.json.id)).toEqual(['job_new', 'job_old0']);
	});
});
