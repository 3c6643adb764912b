/**
 * End-to-end: the packed package inside a real n8n server (1.x and 2.x lines, env E2E_LINES,
 * default "1 2"), against the sandbox over real HTTP on 127.0.0.1. Everything goes through n8n's
 * own REST API and webhooks, as the editor and the service would use them.
 *
 * Run with `npm run test:e2e` (it builds, installs the n8n lines into tools/ and runs this file).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import * as n8n from '../../scripts/n8n';
import type { Execution, N8nHandle, OutputItem, Workflow } from '../../scripts/n8n';
import { startSandbox, type Sandbox } from '../sandbox';

const LINES = (process.env.E2E_LINES ?? '1 2').split(/[\s,]+/).filter(Boolean);
const ARTIFACTS = join(n8n.ROOT, 'test-artifacts', 'e2e');
const PACKAGE = 'n8n-nodes-generation-service';

const NODE_TYPES = [
	'generationServiceImage',
	'generationServiceVideo',
	'generationServiceMusic',
	'generationServiceVoice',
	'generationServiceThreeD',
	'generationServiceAccount',
	'generationServiceTrigger',
].map((name) => `${PACKAGE}.${name}`);

const TRIGGER_TYPE = `${PACKAGE}.generationServiceTrigger`;
const EXAMPLE_TOKEN = 'sandbox-demo-token';

let tarball: string;
beforeAll(async () => {
	mkdirSync(ARTIFACTS, { recursive: true });
	tarball = await n8n.packPackage(mkdtempSync(join(tmpdir(), 'gs-e2e-pack-')));
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 60_000): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const value = await probe();
		if (value !== undefined && value !== null && (value as unknown) !== false) return value;
		if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
		await sleep(200);
	}
}

/** The output items of a node in an execution (first run, first output). */
function outputOf(execution: Execution, nodeName: string): OutputItem[] {
	const runs = execution.data.resultData.runData[nodeName];
	if (!runs) throw new Error(`Node "${nodeName}" did not run; ran: ${Object.keys(execution.data.resultData.runData).join(', ')}`);
	return runs[0].data?.main[0] ?? [];
}

async function fileBytes(url: string): Promise<Buffer> {
	const response = await fetch(url);
	expect(response.status).toBe(200);
	return Buffer.from(await response.arrayBuffer());
}

describe.each(LINES)('n8n %s.x with the packed package', (line) => {
	let sandbox: Sandbox;
	let instance: N8nHandle;
	let credential: { id: string; name: string; type: string };
	const workflows: Record<string, Workflow> = {};

	const workflow = (file: string) => {
		const found = workflows[file];
		if (!found) throw new Error(`Example ${file} was not imported`);
		return found;
	};

	/** Runs an imported example through n8n and returns the finished execution. */
	const runExample = async (file: string) => {
		const executionId = await instance.client.runManually(workflow(file).id);
		const execution = await instance.client.waitForExecution(executionId, instance.parse, { timeoutMs: 90_000 });
		expect(execution.mode).toBe('manual');
		return execution;
	};

	/** The new charges since `before`, checked to be one per generation id and one per idempotency key. */
	const newCharges = (before: number) => {
		const charges = sandbox.charges().slice(before);
		expect(new Set(charges.map((charge) => charge.id)).size).toBe(charges.length);
		expect(new Set(charges.map((charge) => charge.idempotency_key)).size).toBe(charges.length);
		return charges;
	};

	beforeAll(async () => {
		sandbox = await startSandbox({ jobDurationMs: { video: 600, music: 600, voice: 600, threeD: 600 } });
		const userFolder = mkdtempSync(join(tmpdir(), `gs-e2e-n8n-${line}-`));
		const installed = await n8n.installPack(userFolder, tarball);
		expect(installed.name).toBe(PACKAGE);
		const logFile = join(ARTIFACTS, `n8n-${line}.log`);
		rmSync(logFile, { force: true });
		instance = await n8n.startN8n({ line, userFolder, logFile });
		expect(instance.version).toBe(n8n.pinnedVersion(line));
		credential = await n8n.createSandboxCredential(instance.client, { apiKey: sandbox.apiKey, baseUrl: sandbox.baseUrl });
		for (const { file, workflow: created } of await n8n.importExamples(instance.client, {
			credential,
			baseUrl: instance.url,
		})) {
			workflows[file] = created;
		}
	});

	afterAll(async () => {
		await instance?.stop();
		await sandbox?.stop();
		if (instance) rmSync(instance.userFolder, { recursive: true, force: true });
	});

	beforeEach(() => {
		sandbox.resetRecording();
	});

	it('installs the tarball the way n8n installs community packages, without a second n8n-workflow', () => {
		const nodesFolder = join(instance.userFolder, '.n8n', 'nodes');
		const packageDir = join(nodesFolder, 'node_modules', PACKAGE);
		const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));
		expect(manifest.peerDependencies).toBeUndefined();
		expect(manifest.devDependencies).toBeUndefined();
		expect(JSON.parse(readFileSync(join(nodesFolder, 'package.json'), 'utf8')).dependencies).toEqual({
			[PACKAGE]: manifest.version,
		});
		expect(existsSync(join(nodesFolder, 'node_modules', 'n8n-workflow'))).toBe(false);
		expect(existsSync(join(packageDir, 'node_modules'))).toBe(false);
		expect(existsSync(join(packageDir, 'dist', 'nodes'))).toBe(true);
		expect(existsSync(join(packageDir, 'test'))).toBe(false);
		expect(instance.logs()).not.toMatch(/Cannot find module 'n8n-workflow'/);
	});

	it('lists the seven nodes and the credential type, with icons n8n serves', async () => {
		const nodes = await instance.client.raw('GET', '/types/nodes.json');
		expect(nodes.status).toBe(200);
		const ours = (nodes.json as Array<Record<string, any>>).filter((type) => type.name.startsWith(`${PACKAGE}.`));
		// usableAsTool adds a "…Tool" variant of each action node for AI agents.
		const main = ours.filter((type) => !type.name.endsWith('Tool'));
		expect(main.map((type) => type.name).sort()).toEqual([...NODE_TYPES].sort());

		const credentials = await instance.client.raw('GET', '/types/credentials.json');
		expect(credentials.status).toBe(200);
		const credentialType = (credentials.json as Array<Record<string, any>>).find((type) => type.name === 'generationServiceApi');
		expect(credentialType).toBeDefined();
		expect(credentialType!.displayName).toBe('Generation Service API');
		expect(credentialType!.properties.map((property: { name: string }) => property.name)).toEqual(
			expect.arrayContaining(['apiKey', 'baseUrl']),
		);

		const icons = new Set<string>();
		for (const type of [...main, credentialType!]) {
			expect(type.iconUrl).toEqual({ light: expect.any(String), dark: expect.any(String) });
			icons.add(type.iconUrl.light);
			icons.add(type.iconUrl.dark);
		}
		for (const icon of icons) {
			expect(icon).toMatch(new RegExp(`^icons/${PACKAGE}/dist/icons/[\\w.]+\\.svg$`));
			const answer = await instance.client.raw('GET', `/${icon}`, { auth: false });
			expect({ icon, status: answer.status }).toEqual({ icon, status: 200 });
			expect(answer.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
			expect(answer.text.trimStart()).toMatch(/^(<\?xml[^>]*>\s*)?<svg[\s>]/);
		}

		for (const type of main) {
			expect(type.version).toBe(1);
			if (type.name === TRIGGER_TYPE) {
				expect(type.webhooks).toEqual([expect.objectContaining({ httpMethod: 'POST', path: 'webhook' })]);
			} else {
				expect(type.credentials).toEqual([expect.objectContaining({ name: 'generationServiceApi', required: true })]);
			}
		}
	});

	it("passes the credential test with the sandbox key and fails it with a wrong one (the editor's button)", async () => {
		// As the editor does: the saved credential comes back with its secret redacted, and n8n
		// puts the stored key back in before testing.
		const saved = await instance.client.rest('GET', `/credentials/${credential.id}?includeData=true`);
		expect(JSON.stringify(saved)).not.toContain(sandbox.apiKey);
		const good = await instance.client.rest('POST', '/credentials/test', {
			credentials: { id: credential.id, name: credential.name, type: credential.type, data: saved.data },
		});
		expect(good).toEqual({ status: 'OK', message: expect.any(String) });

		const bad = await instance.client.rest('POST', '/credentials/test', {
			credentials: {
				id: credential.id,
				name: credential.name,
				type: credential.type,
				data: { apiKey: 'gs_test_0000000000000000000000000000000000000000', baseUrl: sandbox.baseUrl },
			},
		});
		expect(bad.status).toBe('Error');

		// The free GET /v1/models, with the stored key, then with the wrong one (n8n's tester may
		// send a refused request a second time; each is answered 401).
		const [first, ...wrong] = sandbox.requestsTo('GET', '/v1/models');
		expect([first.headers.authorization, first.status]).toEqual([`Bearer ${sandbox.apiKey}`, 200]);
		expect(wrong.length).toBeGreaterThanOrEqual(1);
		for (const request of wrong) {
			expect([request.headers.authorization, request.status]).toEqual(['Bearer gs_test_0000000000000000000000000000000000000000', 401]);
		}
		expect(sandbox.charges()).toHaveLength(0);
	});

	it('runs the image example: the PNG the sandbox made is in the stored execution, charged once', async () => {
		const before = sandbox.charges().length;
		const execution = await runExample('01-image-to-file.json');
		expect(execution.status).toBe('success');
		const [item, ...rest] = outputOf(execution, 'Generate Image');
		expect(rest).toHaveLength(0);

		const [sent] = sandbox.requestsTo('POST', '/v1/generations/image');
		expect(sent.body).toMatchObject({ model: 'flux-schnell', aspect_ratio: '16:9', seed: 42 });
		expect(item.json).toMatchObject({ id: expect.stringMatching(/^gen_/), status: 'completed', model: 'flux-schnell' });

		const charges = newCharges(before);
		expect(charges).toHaveLength(1);
		expect(charges[0]).toMatchObject({ id: item.json.id, idempotency_key: sent.headers['idempotency-key'], model: 'flux-schnell' });
		expect(charges[0].cost.micro).toBe(item.json.cost.micro);

		const binary = item.binary!.image;
		expect(binary).toMatchObject({ mimeType: 'image/png', fileExtension: 'png', fileName: `${item.json.id}.png` });
		const bytes = await instance.client.binaryBytes(binary);
		expect(bytes.equals(await fileBytes(item.json.url))).toBe(true);
		expect(bytes.subarray(1, 4).toString()).toBe('PNG');
	});

	it('runs the video example: waits for the job and stores the MP4, charged once', async () => {
		const before = sandbox.charges().length;
		const execution = await runExample('02-video-wait-mp4.json');
		expect(execution.status).toBe('success');
		const [item] = outputOf(execution, 'Generate Video');

		expect(item.json).toMatchObject({ id: expect.stringMatching(/^job_/), status: 'completed', model: 'kling-2.1' });
		// The output is the finished job exactly as the service shows it.
		expect(item.json).toEqual(sandbox.job(item.json.id));
		expect(sandbox.requestsTo('POST', '/v1/generations/video')).toHaveLength(1);
		expect(sandbox.requestsTo('GET', `/v1/jobs/${item.json.id}`).length).toBeGreaterThanOrEqual(1);

		const charges = newCharges(before);
		expect(charges.map((charge) => [charge.id, charge.cost.micro])).toEqual([[item.json.id, 5 * 60_000]]);

		const binary = item.binary!.data;
		expect(binary).toMatchObject({ mimeType: 'video/mp4', fileExtension: 'mp4' });
		const bytes = await instance.client.binaryBytes(binary);
		expect(bytes.equals(await fileBytes(item.json.url))).toBe(true);
		expect(bytes.subarray(4, 8).toString()).toBe('ftyp');
	});

	it('runs the cost-guarded batch: items above Max Cost are refused before any charge, the rest charged once each', async () => {
		const before = sandbox.charges().length;
		const execution = await runExample('05-cost-guarded-batch.json');
		expect(execution.status).toBe('success');
		const items = outputOf(execution, 'Generate Images (Max Cost)');
		expect(items).toHaveLength(4);

		const refused = items[2];
		expect(refused.binary).toBeUndefined();
		expect(refused.json).toEqual({ error: expect.stringContaining('Max Cost'), code: 'max_cost_exceeded', status: null });

		const generated = [items[0], items[1], items[3]];
		expect(generated.map((item) => item.json.model)).toEqual(['flux-schnell', 'seedream-jpeg', 'flux-schnell']);
		const charges = newCharges(before);
		expect(charges.map((charge) => charge.id).sort()).toEqual(generated.map((item) => item.json.id).sort());
		expect(charges.find((charge) => charge.model === 'flux-pro')).toBeUndefined();
		// Estimates for all four (free), then one charged request per item under the cap.
		const posts = sandbox.requestsTo('POST', '/v1/generations/image');
		expect(posts.filter((request) => (request.body as { confirm?: boolean }).confirm === false)).toHaveLength(4);
		expect(posts.filter((request) => (request.body as { confirm?: boolean }).confirm !== false)).toHaveLength(3);

		for (const item of generated) {
			const jpeg = item.json.model === 'seedream-jpeg';
			expect(item.binary!.data).toMatchObject({
				mimeType: jpeg ? 'image/jpeg' : 'image/png',
				fileExtension: jpeg ? 'jpg' : 'png',
			});
			const bytes = await instance.client.binaryBytes(item.binary!.data);
			expect(bytes.equals(await fileBytes(item.json.url))).toBe(true);
		}
	});

	it('runs the credits and usage report: figures match the sandbox ledger, and reading them is free', async () => {
		const before = sandbox.charges().length;
		const execution = await runExample('04-credits-usage-report.json');
		expect(execution.status).toBe('success');
		const [report, ...rest] = outputOf(execution, 'Report');
		expect(rest).toHaveLength(0);
		const spent = sandbox.charges().reduce((sum, charge) => sum + charge.cost.micro, 0);
		expect(report.json).toMatchObject({
			balance: `$${(sandbox.balanceMicro() / 1e6).toFixed(6)}`,
			spent_last_30_days: `$${(spent / 1e6).toFixed(6)}`,
			generations_last_30_days: sandbox.charges().length,
		});
		expect(report.json.by_modality).toHaveLength(5);
		expect(newCharges(before)).toHaveLength(0);
	});

	it('delivers a finished music job to the active Trigger workflow; a wrong token is refused and starts nothing', async () => {
		const receiver = workflow('03-music-job-finished-trigger.json');
		const trigger = receiver.nodes.find((node) => node.type === TRIGGER_TYPE)!;
		const productionUrl = `${instance.url}/webhook/${trigger.webhookId}/webhook`;
		const active = await instance.client.rest('GET', `/workflows/${receiver.id}`);
		expect(active.active).toBe(true);

		// A wrong or missing token: 401, no execution. (This also waits until n8n has registered
		// the webhook: 2.x does it a moment after activation.)
		const fakeJob = { id: 'job_not_real', status: 'completed', modality: 'music', model: 'suno-v4' };
		expect(await n8n.waitForWebhook(`${productionUrl}?token=wrong`, { body: fakeJob })).toBe(401);
		const noToken = await fetch(productionUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(fakeJob) });
		expect(noToken.status).toBe(401);
		const wrongHeader = await fetch(productionUrl, {
			method: 'POST',
			headers: { 'content-type': 'application/json', 'x-webhook-token': 'wrong' },
			body: JSON.stringify(fakeJob),
		});
		expect(wrongHeader.status).toBe(401);

		// Submit the music job; the service posts the finished job to the Trigger's production URL.
		const before = sandbox.charges().length;
		const submit = await runExample('03-music-submit-with-webhook.json');
		expect(submit.status).toBe('success');
		const [submitted] = outputOf(submit, 'Submit Music Job');
		expect(submitted.json).toMatchObject({ id: expect.stringMatching(/^job_/), status: expect.stringMatching(/^(queued|processing)$/) });
		const jobId = submitted.json.id as string;
		const [sent] = sandbox.requestsTo('POST', '/v1/generations/music');
		expect((sent.body as { webhook_url: string }).webhook_url).toBe(`${productionUrl}?token=${EXAMPLE_TOKEN}`);

		const delivery = await until('the webhook delivery', () =>
			sandbox.webhookDeliveries.find((entry) => entry.jobId === jobId && entry.url.startsWith(productionUrl)),
		);
		expect(delivery.status).toBe(200);
		// An accepted delivery gets an empty 200, not n8n's fallback text "firstEntryJson".
		expect(delivery.responseBody).toBe('');

		const [summary] = await until('the trigger execution', async () => {
			const executions = await instance.client.executionsOf(receiver.id);
			return executions.length > 0 ? executions : undefined;
		});
		const execution = await instance.client.waitForExecution(summary.id, instance.parse);
		expect(execution.mode).toBe('webhook');
		expect(execution.status).toBe('success');
		const [received] = outputOf(execution, 'Job Finished');
		expect(received.json).toEqual(sandbox.job(jobId));
		expect(received.json).toMatchObject({ id: jobId, status: 'completed', modality: 'music' });

		const [downloaded] = outputOf(execution, 'Download MP3');
		expect(downloaded.json).toEqual(sandbox.job(jobId));
		expect(downloaded.binary!.data).toMatchObject({ mimeType: 'audio/mpeg', fileExtension: 'mp3' });
		const bytes = await instance.client.binaryBytes(downloaded.binary!.data);
		expect(bytes.equals(await fileBytes(received.json.url))).toBe(true);

		// The job was charged once; fetching it again by its ID costs nothing.
		expect(newCharges(before).map((charge) => charge.id)).toEqual([jobId]);

		// The real job body with a wrong token: refused, and still one execution.
		const refused = await fetch(`${productionUrl}?token=wrong`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify(sandbox.job(jobId)),
		});
		expect(refused.status).toBe(401);
		// A redelivery of the same job result is answered 200 and starts no second execution.
		await sandbox.redeliver(jobId);
		expect(sandbox.webhookDeliveries.filter((entry) => entry.jobId === jobId).map((entry) => entry.status)).toEqual([200, 200]);
		await sleep(1500);
		const executions = await instance.client.executionsOf(receiver.id);
		expect(executions.map((entry) => entry.id)).toEqual([summary.id]);
	});

	it('left no error in the n8n log about the package', () => {
		const log = instance.logs();
		expect(log).not.toMatch(/n8n-nodes-generation-service[^\n]*(error|failed)/i);
		expect(instance.exited()).toBeNull();
	});
});
