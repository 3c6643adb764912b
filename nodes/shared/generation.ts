import { createHash } from 'crypto';
import type { IBinaryData, IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import {
	DEFAULT_CONCURRENCY,
	DEFAULT_REQUEST_TIMEOUT_S,
	DEFAULT_WAIT_TIMEOUT_S,
} from './description';
import type { ModalityDefinition } from './fields';
import { readBodyFields } from './fields';
import { itemSuffix, serviceError, ServiceClient, waitOrCancel } from './transport';

const PENDING = new Set(['queued', 'processing', 'pending', 'running', 'in_progress']);
const FIRST_POLL_MS = 1000;
const MAX_POLL_MS = 15_000;
const POLL_TIMEOUT_MS = 30_000;

/** What one item asks for, read and checked before any request is sent. */
interface ItemPlan {
	index: number;
	operation: string;
	body: IDataObject;
	jobId: string;
	idempotencyKey: string;
	waitForCompletion: boolean;
	download: boolean;
	binaryPropertyName: string;
	maxCostMicro: number;
	waitTimeoutMs: number;
	requestTimeoutMs: number;
}

/** Bounds how many items talk to the service at once; FIFO, so items start in input order. */
class Limiter {
	private active = 0;
	private readonly queue: Array<() => void> = [];

	/** `onFailure` runs when a task throws, before its slot passes to the next waiting task. */
	constructor(
		private readonly size: number,
		private readonly onFailure?: () => void,
	) {}

	async run<T>(task: () => Promise<T>): Promise<T> {
		if (this.active >= this.size) await new Promise<void>((resolve) => this.queue.push(resolve));
		else this.active++;
		let succeeded = false;
		try {
			const value = await task();
			succeeded = true;
			return value;
		} finally {
			if (!succeeded) this.onFailure?.();
			const next = this.queue.shift();
			if (next) next();
			else this.active--;
		}
	}
}

/** Marks an item that was never started because an earlier item failed the node. */
const SKIPPED = Symbol('skipped');

export interface ItemRun {
	index: number;
	limiter: Limiter;
	client: ServiceClient;
	/** Throws SKIPPED when the node is already failing and new work must not begin. */
	checkNotStopped: () => void;
	/** Records a generation or job ID the service accepted (it may be charged). */
	submitted: (id: string) => void;
}

/**
 * Runs every item with at most `concurrency` of them in a request at once. Output order and
 * pairedItem follow the input. Without Continue On Fail, the first failure stops new items from
 * starting, lets the ones already sent settle, then fails the node naming what was submitted.
 */
export async function runItems(
	ctx: IExecuteFunctions,
	count: number,
	concurrency: number,
	continueOnFail: boolean,
	work: (run: ItemRun) => Promise<INodeExecutionData[]>,
): Promise<INodeExecutionData[]> {
	const outputs: INodeExecutionData[][] = new Array(count);
	const submittedIds: string[] = [];
	let failure: { index: number; error: Error } | undefined;
	// Set as soon as a task fails in its slot, before the freed slot starts the next item: the item
	// error itself is recorded only after the failure has travelled up through the item's awaits.
	let stopping = false;
	const limiter = new Limiter(concurrency, () => {
		stopping = true;
	});
	const client = new ServiceClient(ctx);

	await Promise.all(
		Array.from({ length: count }, async (_, index) => {
			try {
				outputs[index] = await work({
					index,
					limiter,
					client,
					checkNotStopped: () => {
						if ((failure || stopping) && !continueOnFail) throw SKIPPED;
					},
					submitted: (id) => submittedIds.push(id),
				});
			} catch (error) {
				if (error === SKIPPED) return;
				if (continueOnFail) outputs[index] = [errorItem(error as Error, index)];
				else if (!failure || index < failure.index) failure = { index, error: error as Error };
			}
		}),
	);
	if (failure) {
		const error = failure.error as Error & { description?: string | null };
		if (submittedIds.length > 0) {
			const note = `Submitted to the service before the node stopped (these may be charged): ${submittedIds.join(', ')}`;
			error.description = error.description ? `${error.description}\n${note}` : note;
		}
		throw error;
	}
	return outputs.flat();
}

/** The `{ error, code, status }` item that Continue On Fail puts on the failing item's output. */
function errorItem(error: Error, index: number): INodeExecutionData {
	const context = (error as { context?: IDataObject }).context ?? {};
	return {
		json: {
			error: error.message,
			code: (context.serviceCode as string | undefined) ?? null,
			status: (context.serviceStatus as number | undefined) ?? null,
		},
		pairedItem: { item: index },
	};
}

export function invalidParameter(
	ctx: IExecuteFunctions,
	index: number,
	message: string,
	description?: string,
): NodeOperationError {
	const error = new NodeOperationError(ctx.getNode(), `${message}${itemSuffix(index)}`, {
		itemIndex: index,
		description,
	});
	error.context.serviceCode = 'invalid_parameter';
	return error;
}

function numberOption(
	ctx: IExecuteFunctions,
	options: IDataObject,
	name: string,
	label: string,
	fallback: number,
	index: number,
	min: number,
): number {
	const raw = options[name];
	if (raw === undefined || raw === '' || raw === null) return fallback;
	const value = Number(raw);
	if (!Number.isFinite(value) || value < min) {
		throw invalidParameter(ctx, index, `Invalid value for "${label}" (options.${name}): ${JSON.stringify(raw)}`, `Allowed: a number of at least ${min}.`);
	}
	return value;
}

/** Stable across n8n's Retry On Fail of the same run; distinct per item, run and execution. */
function defaultIdempotencyKey(ctx: IExecuteFunctions, index: number): string {
	const runIndex = ctx.getWorkflowDataProxy(index).$runIndex;
	const parts = [ctx.getExecutionId(), ctx.getWorkflow().id, ctx.getNode().id, runIndex, index];
	return `n8n-${createHash('sha256').update(parts.join(':')).digest('hex').slice(0, 40)}`;
}

function planItem(ctx: IExecuteFunctions, definition: ModalityDefinition, operation: string, index: number): ItemPlan {
	const options = ctx.getNodeParameter('options', index, {}) as IDataObject;
	const plan: ItemPlan = {
		index,
		operation,
		body: {},
		jobId: '',
		idempotencyKey: '',
		waitForCompletion: false,
		download: false,
		binaryPropertyName: String(options.binaryPropertyName || 'data'),
		maxCostMicro: numberOption(ctx, options, 'maxCostMicro', 'Max Cost (Microdollars)', 0, index, 0),
		waitTimeoutMs: numberOption(ctx, options, 'waitTimeout', 'Wait Timeout (Seconds)', DEFAULT_WAIT_TIMEOUT_S, index, 1) * 1000,
		requestTimeoutMs:
			numberOption(ctx, options, 'requestTimeout', 'Request Timeout (Seconds)', DEFAULT_REQUEST_TIMEOUT_S, index, 1) * 1000,
	};
	if (operation === 'getJob') {
		plan.jobId = String(ctx.getNodeParameter('jobId', index, '') ?? '').trim();
		if (!plan.jobId || /[\s/?#]/.test(plan.jobId)) {
			throw invalidParameter(ctx, index, `Invalid value for "Job ID" (jobId): ${JSON.stringify(plan.jobId)}`, 'Allowed: the ID that Generate returned, such as job_8f2c1a.');
		}
		plan.download = ctx.getNodeParameter('download', index, true) as boolean;
		return plan;
	}

	const model = String(ctx.getNodeParameter('model', index, '', { extractValue: true }) ?? '').trim();
	if (!model) throw invalidParameter(ctx, index, 'No model is selected', 'Choose a model from the list or enter a model ID.');
	const prompt = ctx.getNodeParameter('prompt', index, '');
	if (typeof prompt !== 'string' || prompt.trim() === '') {
		throw invalidParameter(ctx, index, 'The prompt is empty', 'Every generation needs a prompt (§4: prompt is required).');
	}
	const fields = readBodyFields(definition, ctx.getNodeParameter('additionalFields', index, {}) as IDataObject);
	if (!fields.ok) {
		throw invalidParameter(
			ctx,
			index,
			`Invalid value for "${fields.field.displayName}" (${fields.field.name}): ${JSON.stringify(fields.value)}`,
			`Allowed: ${fields.allowed}.`,
		);
	}
	plan.body = { ...fields.body, model, prompt };
	if (operation === 'generate') {
		plan.waitForCompletion = definition.jobs && (ctx.getNodeParameter('waitForCompletion', index, true) as boolean);
		plan.download = ctx.getNodeParameter('download', index, true) as boolean;
		plan.idempotencyKey = String(options.idempotencyKey ?? '').trim() || defaultIdempotencyKey(ctx, index);
	}
	return plan;
}

/**
 * The whole flow of a modality node: read and check every item, then estimate, generate, wait for
 * jobs and download outputs, with at most `options.concurrency` items in a request at once.
 */
export async function executeGeneration(
	ctx: IExecuteFunctions,
	definition: ModalityDefinition,
	continueOnFail: boolean,
): Promise<INodeExecutionData[]> {
	const items = ctx.getInputData();
	const operation = ctx.getNodeParameter('operation', 0) as string;
	const extra = definition.extraOperations?.find((candidate) => candidate.option.value === operation);
	if (extra) {
		return await runItems(ctx, items.length, 1, continueOnFail, async (run) =>
			(await extra.execute(run.client, run.index)).map((json) => ({ json, pairedItem: { item: run.index } })),
		);
	}

	// Every item is checked before the first request, so a typo in one item costs nothing.
	const plans: Array<ItemPlan | Error> = items.map((_, index) => {
		try {
			return planItem(ctx, definition, operation, index);
		} catch (error) {
			return error as Error;
		}
	});
	const keyOwners = new Map<string, number>();
	for (const plan of plans) {
		if (plan instanceof Error || !plan.idempotencyKey) continue;
		const owner = keyOwners.get(plan.idempotencyKey);
		if (owner !== undefined) {
			plans[plan.index] = invalidParameter(
				ctx,
				plan.index,
				`Items ${owner} and ${plan.index} use the same Idempotency Key`,
				'The service answers a repeated key with the first answer, so the second item would get the first item\'s result. Leave the option empty, or use an expression that differs per item.',
			);
		} else keyOwners.set(plan.idempotencyKey, plan.index);
	}
	const invalid = plans.find((plan): plan is Error => plan instanceof Error);
	if (invalid && !continueOnFail) throw invalid;

	const first = plans.find((plan): plan is ItemPlan => !(plan instanceof Error));
	const concurrency = first
		? Math.floor(numberOption(ctx, ctx.getNodeParameter('options', first.index, {}) as IDataObject, 'concurrency', 'Items in Flight', DEFAULT_CONCURRENCY, first.index, 1))
		: 1;

	return await runItems(ctx, items.length, concurrency, continueOnFail, async (run) => {
		const plan = plans[run.index];
		if (plan instanceof Error) throw plan;
		if (operation === 'estimate') {
			const estimate = await run.limiter.run(async () => {
				run.checkNotStopped();
				return await estimateCost(run, definition, plan);
			});
			return [{ json: estimate, pairedItem: { item: run.index } }];
		}
		if (operation === 'getJob') {
			const job = await run.limiter.run(async () => {
				run.checkNotStopped();
				return await run.client.request<IDataObject>({ method: 'GET', path: jobPath(plan.jobId), timeoutMs: plan.requestTimeoutMs }, run.index);
			});
			return [await outputItem(ctx, run, definition, plan, job)];
		}
		return [await generate(ctx, run, definition, plan)];
	});
}

async function estimateCost(run: ItemRun, definition: ModalityDefinition, plan: ItemPlan): Promise<IDataObject> {
	return await run.client.request<IDataObject>(
		{ method: 'POST', path: definition.endpoint, body: { ...plan.body, confirm: false }, timeoutMs: plan.requestTimeoutMs },
		run.index,
	);
}

async function generate(
	ctx: IExecuteFunctions,
	run: ItemRun,
	definition: ModalityDefinition,
	plan: ItemPlan,
): Promise<INodeExecutionData> {
	let result = await run.limiter.run(async () => {
		run.checkNotStopped();
		if (plan.maxCostMicro > 0) {
			const estimate = await estimateCost(run, definition, plan);
			const micro = Number((estimate.estimated_cost as IDataObject | undefined)?.micro);
			if (!Number.isFinite(micro) || micro > plan.maxCostMicro) {
				const error = invalidParameter(
					ctx,
					run.index,
					Number.isFinite(micro)
						? `The estimated cost of ${micro} microdollars is above Max Cost (${plan.maxCostMicro} microdollars)`
						: 'The service gave no estimated cost, so Max Cost cannot be checked',
					'Nothing was generated or charged. Raise Max Cost (Microdollars), or choose a cheaper model or shorter output.',
				);
				error.context.serviceCode = 'max_cost_exceeded';
				throw error;
			}
		}
		return await run.client.request<IDataObject>(
			{
				method: 'POST',
				path: definition.endpoint,
				body: plan.body,
				idempotencyKey: plan.idempotencyKey,
				timeoutMs: plan.requestTimeoutMs,
			},
			run.index,
		);
	});
	if (typeof result.id === 'string') run.submitted(result.id);
	if (plan.waitForCompletion && isPending(result)) {
		result = await waitForJob(ctx, run, definition, String(result.id), plan);
	}
	if (result.status === 'failed') throw jobFailed(ctx, definition, result, run.index);
	return await outputItem(ctx, run, definition, plan, result);
}

function isPending(result: IDataObject): boolean {
	return typeof result.id === 'string' && PENDING.has(String(result.status));
}

function jobPath(id: string): string {
	return `/v1/jobs/${encodeURIComponent(id)}`;
}

/** Polls §4.6 with a growing interval. Holds no concurrency slot, so many jobs wait together. */
async function waitForJob(
	ctx: IExecuteFunctions,
	run: ItemRun,
	definition: ModalityDefinition,
	jobId: string,
	plan: ItemPlan,
): Promise<IDataObject> {
	const deadline = Date.now() + plan.waitTimeoutMs;
	for (let delay = FIRST_POLL_MS; ; delay = Math.min(delay * 1.5, MAX_POLL_MS)) {
		await waitOrCancel(ctx, Math.max(0, Math.min(delay, deadline - Date.now())), run.index);
		const job = await run.client.request<IDataObject>(
			{ method: 'GET', path: jobPath(jobId), timeoutMs: POLL_TIMEOUT_MS },
			run.index,
		);
		if (!isPending(job)) return job;
		if (Date.now() >= deadline) {
			throw new NodeOperationError(
				ctx.getNode(),
				`The ${definition.noun} job ${jobId} did not finish within ${plan.waitTimeoutMs / 1000} seconds${itemSuffix(run.index)}`,
				{
					itemIndex: run.index,
					description: `Its last status was "${String(job.status)}". The job may still finish and be charged. Fetch its result later with the Get Job operation and Job ID ${jobId}, or raise Wait Timeout (Seconds).`,
				},
			);
		}
	}
}

function jobFailed(ctx: IExecuteFunctions, definition: ModalityDefinition, job: IDataObject, index: number) {
	// §7 rule 5: the reason of a failed job is not specified, so it is shown as sent.
	const reason = job.error ?? job.reason ?? job.message;
	const reasonText =
		typeof reason === 'string'
			? reason
			: typeof (reason as IDataObject | undefined)?.message === 'string'
				? String((reason as IDataObject).message)
				: reason === undefined
					? 'the service gave no reason'
					: JSON.stringify(reason);
	const code = typeof (reason as IDataObject | undefined)?.code === 'string' ? String((reason as IDataObject).code) : 'job_failed';
	return serviceError(
		ctx,
		{ code, message: `The ${definition.noun} generation ${String(job.id)} failed: ${reasonText}` },
		undefined,
		index,
		`Result as sent by the service: ${JSON.stringify(job)}`,
	);
}

// ---------- output ----------

const EXTENSION_BY_MIME: Record<string, string> = {
	'image/png': 'png',
	'image/jpeg': 'jpg',
	'image/webp': 'webp',
	'image/gif': 'gif',
	'video/mp4': 'mp4',
	'video/webm': 'webm',
	'video/quicktime': 'mov',
	'audio/mpeg': 'mp3',
	'audio/mp3': 'mp3',
	'audio/wav': 'wav',
	'audio/x-wav': 'wav',
	'audio/ogg': 'ogg',
	'audio/flac': 'flac',
	'model/gltf-binary': 'glb',
	'model/gltf+json': 'gltf',
	'model/obj': 'obj',
	'model/stl': 'stl',
};
const MIME_BY_EXTENSION: Record<string, string> = {
	...Object.fromEntries(Object.entries(EXTENSION_BY_MIME).map(([mime, extension]) => [extension, mime])),
	jpeg: 'image/jpeg',
	mp3: 'audio/mpeg',
	wav: 'audio/wav',
};

/** The Content-Type when it is specific, else the URL's extension, else the modality's usual type. */
function fileTypeOf(contentType: string | undefined, url: string, fallbackMime: string) {
	const mime = contentType?.split(';')[0].trim().toLowerCase();
	if (mime && EXTENSION_BY_MIME[mime]) return { mimeType: mime, extension: EXTENSION_BY_MIME[mime] };
	let pathExtension = '';
	try {
		pathExtension = new URL(url).pathname.split('.').pop()?.toLowerCase() ?? '';
	} catch {
		// not a URL: fall back
	}
	const byPath = MIME_BY_EXTENSION[pathExtension];
	if (byPath) return { mimeType: byPath, extension: EXTENSION_BY_MIME[byPath] };
	return { mimeType: fallbackMime, extension: EXTENSION_BY_MIME[fallbackMime] ?? 'bin' };
}

async function outputItem(
	ctx: IExecuteFunctions,
	run: ItemRun,
	definition: ModalityDefinition,
	plan: ItemPlan,
	result: IDataObject,
): Promise<INodeExecutionData> {
	const item: INodeExecutionData = { json: result, pairedItem: { item: run.index } };
	if (!plan.download || typeof result.url !== 'string' || result.status === 'failed' || isPending(result)) return item;
	const url = result.url;
	const binary = await run.limiter.run(async () =>
		run.client.download(url, run.index, async (stream, contentType): Promise<IBinaryData> => {
			const { mimeType, extension } = fileTypeOf(contentType, url, definition.defaultMimeType);
			const fileName = `${String(result.id ?? definition.modality)}.${extension}`;
			// A stream, never a Buffer: in filesystem mode a large video goes straight to disk.
			const data = await ctx.helpers.prepareBinaryData(stream, fileName, mimeType);
			return { ...data, fileName, fileExtension: extension, mimeType };
		}),
	);
	item.binary = { [plan.binaryPropertyName]: binary };
	return item;
}
