import type {
	IDataObject,
	IExecuteFunctions,
	IHttpRequestMethods,
	IHttpRequestOptions,
	ILoadOptionsFunctions,
	JsonObject,
} from 'n8n-workflow';
import * as n8nWorkflow from 'n8n-workflow';
import { NodeApiError, NodeOperationError, sleep } from 'n8n-workflow';

export const CREDENTIAL_TYPE = 'generationServiceApi';

/** The response stream of a download, as n8n's prepareBinaryData takes it. */
export type DownloadStream = Exclude<Parameters<IExecuteFunctions['helpers']['prepareBinaryData']>[0], Buffer>;

/** §7 rule 2: at most 3 retries, after 1 s, 2 s and 4 s. */
const RETRY_DELAYS_MS = [1000, 2000, 4000];
/** A Retry-After longer than this is not waited for in full: the item would look hung. */
const MAX_RETRY_AFTER_MS = 60_000;
const DEFAULT_TIMEOUT_MS = 120_000;
const NETWORK_ERROR_CODES = new Set([
	'ECONNRESET',
	'ECONNREFUSED',
	'ECONNABORTED',
	'ETIMEDOUT',
	'ESOCKETTIMEDOUT',
	'EPIPE',
	'EAI_AGAIN',
	'ENOTFOUND',
	'EHOSTUNREACH',
	'ENETUNREACH',
	'ERR_BAD_RESPONSE',
	'UND_ERR_SOCKET',
	'ERR_STREAM_PREMATURE_CLOSE',
]);

type Context = IExecuteFunctions | ILoadOptionsFunctions;

const NETWORK_FAILURES: Record<string, string> = {
	ECONNREFUSED: 'the connection was refused (is the Base URL right?)',
	ECONNRESET: 'the connection was closed before an answer came',
	ECONNABORTED: 'no answer came within the request timeout',
	ETIMEDOUT: 'no answer came within the request timeout',
	ESOCKETTIMEDOUT: 'no answer came within the request timeout',
	ENOTFOUND: 'the host name of the Base URL was not found',
	EAI_AGAIN: 'the host name of the Base URL could not be looked up',
	INVALID_JSON: 'its answer was not valid JSON',
};

export interface ServiceRequest {
	method: IHttpRequestMethods;
	/** Path below the base URL, starting with /v1. */
	path: string;
	body?: IDataObject;
	qs?: IDataObject;
	/** Sent as Idempotency-Key, the same on every attempt (§7 rule 1). */
	idempotencyKey?: string;
	timeoutMs?: number;
}

export interface ServiceErrorBody {
	code?: string;
	message?: string;
	status?: number;
	[key: string]: unknown;
}

/** A failure that may succeed when tried again (§7: 429, 5xx, and no usable answer at all). */
class RetryableFailure extends Error {
	constructor(
		readonly reason: string,
		readonly status?: number,
		readonly errorBody?: ServiceErrorBody,
		readonly retryAfterMs?: number,
	) {
		super(reason);
	}
}

/** `sleepWithAbort` exists in n8n-workflow 1.x; in 2.x `sleep` itself takes the signal. */
const abortableSleep: (ms: number, signal?: AbortSignal) => Promise<void> =
	(n8nWorkflow as { sleepWithAbort?: (ms: number, signal?: AbortSignal) => Promise<void> })
		.sleepWithAbort ?? (sleep as (ms: number, signal?: AbortSignal) => Promise<void>);

export function itemSuffix(itemIndex: number | undefined): string {
	return itemIndex === undefined ? '' : ` [item ${itemIndex}]`;
}

function cancelSignal(ctx: Context): AbortSignal | undefined {
	return 'getExecutionCancelSignal' in ctx ? ctx.getExecutionCancelSignal() : undefined;
}

/** Waits, but returns early (throwing) when the execution is cancelled. */
export async function waitOrCancel(ctx: Context, ms: number, itemIndex?: number): Promise<void> {
	const signal = cancelSignal(ctx);
	throwIfCancelled(ctx, signal, itemIndex);
	if (ms > 0) await abortableSleep(ms, signal);
	throwIfCancelled(ctx, signal, itemIndex);
}

function throwIfCancelled(ctx: Context, signal: AbortSignal | undefined, itemIndex?: number) {
	if (signal?.aborted) {
		throw new NodeOperationError(ctx.getNode(), `The execution was cancelled${itemSuffix(itemIndex)}`, {
			itemIndex,
		});
	}
}

/** Seconds or an HTTP date (RFC 9110 §10.2.3), capped. */
function parseRetryAfter(value: unknown, now = Date.now()): number | undefined {
	if (typeof value !== 'string' && typeof value !== 'number') return undefined;
	const text = String(value).trim();
	if (text === '') return undefined;
	let ms: number;
	if (/^\d+(\.\d+)?$/.test(text)) ms = Number(text) * 1000;
	else {
		const date = Date.parse(text);
		if (Number.isNaN(date)) return undefined;
		ms = date - now;
	}
	return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}

function networkErrorCode(error: unknown): string | undefined {
	let current: unknown = error;
	for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
		// n8n's NodeApiError keeps the network code in httpCode; axios and Node errors in code.
		for (const code of [(current as { code?: unknown }).code, (current as { httpCode?: unknown }).httpCode]) {
			if (typeof code === 'string' && (NETWORK_ERROR_CODES.has(code) || code === 'ERR_CANCELED')) return code;
		}
		current = (current as { cause?: unknown }).cause;
	}
	const message = String((error as Error)?.message ?? '');
	if (/timeout/i.test(message)) return 'ETIMEDOUT';
	if (/socket hang up|aborted/i.test(message)) return 'ECONNRESET';
	return undefined;
}

function header(headers: unknown, name: string): string | undefined {
	if (!headers || typeof headers !== 'object') return undefined;
	for (const [key, value] of Object.entries(headers as Record<string, unknown>)) {
		if (key.toLowerCase() === name) return Array.isArray(value) ? String(value[0]) : String(value);
	}
	return undefined;
}

function parseJson(text: unknown): { ok: true; value: unknown } | { ok: false } {
	if (typeof text !== 'string') return text === undefined ? { ok: false } : { ok: true, value: text };
	try {
		return { ok: true, value: JSON.parse(text) };
	} catch {
		return { ok: false };
	}
}

/** The §7 error object, or a stand-in when the body is not one. */
function errorBodyOf(parsed: unknown, status: number): ServiceErrorBody {
	const error = (parsed as { error?: unknown } | undefined)?.error;
	if (error && typeof error === 'object') return error as ServiceErrorBody;
	return { message: `The service answered HTTP ${status}`, status };
}

function describe(body: ServiceErrorBody, status: number | undefined): string {
	const details = Object.fromEntries(
		Object.entries(body).filter(([key]) => !['code', 'message', 'status'].includes(key)),
	);
	const parts = [`Code: ${body.code ?? 'none'}`, `HTTP status: ${status ?? body.status ?? 'none'}`];
	// §7 rule 4: the cap details of a 402 are not specified, so they are shown as sent.
	if (Object.keys(details).length > 0) parts.push(`Details: ${JSON.stringify(details)}`);
	return parts.join(' · ');
}

/** An error built only from what the service said: no request options, so no Authorization header. */
export function serviceError(
	ctx: Context,
	body: ServiceErrorBody,
	status: number | undefined,
	itemIndex: number | undefined,
	extraDescription?: string,
): NodeApiError {
	const message = body.message ?? `The service answered HTTP ${status}`;
	const description = [describe(body, status), extraDescription].filter(Boolean).join('\n');
	const error = new NodeApiError(ctx.getNode(), { error: body } as unknown as JsonObject, {
		message: `${message}${itemSuffix(itemIndex)}`,
		description,
		httpCode: status === undefined ? undefined : String(status),
		itemIndex,
	});
	error.context.serviceCode = body.code;
	error.context.serviceStatus = status;
	return error;
}

/**
 * One client per node execution: every request of the pack goes through `request` (JSON API calls,
 * with the credential) or `download` (output files, without it: a CDN must never see the key).
 */
export class ServiceClient {
	private baseUrl?: Promise<string>;

	constructor(private readonly ctx: Context) {}

	private async base(): Promise<string> {
		this.baseUrl ??= this.ctx.getCredentials(CREDENTIAL_TYPE).then((credentials) =>
			String(credentials.baseUrl ?? '')
				.trim()
				.replace(/\/+$/, '')
				.replace(/\/v1$/, ''),
		);
		return await this.baseUrl;
	}

	/** A JSON request with the §7 retry rules. Returns the parsed body (undefined for 204). */
	async request<T = IDataObject>(req: ServiceRequest, itemIndex?: number): Promise<T> {
		const url = `${await this.base()}${req.path}`;
		const headers: IDataObject = { Accept: 'application/json' };
		if (req.body) headers['Content-Type'] = 'application/json';
		if (req.idempotencyKey) headers['Idempotency-Key'] = req.idempotencyKey;
		const options: IHttpRequestOptions = {
			method: req.method,
			url,
			headers,
			qs: req.qs,
			body: req.body ? JSON.stringify(req.body) : undefined,
			encoding: 'text',
			json: false,
			returnFullResponse: true,
			ignoreHttpStatusErrors: true,
			timeout: req.timeoutMs ?? DEFAULT_TIMEOUT_MS,
			abortSignal: cancelSignal(this.ctx),
		};
		return await this.withRetries(itemIndex, async () => {
			const response = await this.ctx.helpers.httpRequestWithAuthentication
				.call(this.ctx, CREDENTIAL_TYPE, options)
				.catch((error: unknown) => this.transportFailure(error, itemIndex));
			if (response instanceof RetryableFailure) return response;
			const status = Number(response.statusCode);
			const parsed = parseJson(response.body);
			if (status >= 200 && status < 300) {
				if (status === 204 || response.body === '' || response.body === undefined) return undefined as T;
				if (!parsed.ok) return new RetryableFailure('INVALID_JSON');
				return parsed.value as T;
			}
			const errorBody = errorBodyOf(parsed.ok ? parsed.value : undefined, status);
			if (status === 429 || status >= 500) {
				const retryAfter = parseRetryAfter(header(response.headers, 'retry-after'));
				return new RetryableFailure(`HTTP ${status}`, status, errorBody, retryAfter);
			}
			throw serviceError(this.ctx, errorBody, status, itemIndex);
		});
	}

	/**
	 * GET an output file as a stream and hand it to `consume` (e.g. prepareBinaryData). A failure while
	 * fetching or consuming is retried like an API call; downloads are free, so nothing is charged twice.
	 */
	async download<T>(
		url: string,
		itemIndex: number | undefined,
		consume: (stream: DownloadStream, contentType: string | undefined) => Promise<T>,
	): Promise<T> {
		const ctx = this.ctx as IExecuteFunctions;
		return await this.withRetries(itemIndex, async () => {
			const response = await ctx.helpers
				.httpRequest({
					method: 'GET',
					url,
					encoding: 'stream',
					returnFullResponse: true,
					ignoreHttpStatusErrors: true,
					timeout: DEFAULT_TIMEOUT_MS,
					abortSignal: cancelSignal(ctx),
				})
				.catch((error: unknown) => this.transportFailure(error, itemIndex));
			if (response instanceof RetryableFailure) return response;
			const status = Number(response.statusCode);
			const stream = response.body as DownloadStream;
			if (status < 200 || status >= 300) {
				stream?.resume?.();
				const body: ServiceErrorBody = {
					message: `The output file could not be downloaded (HTTP ${status})`,
					status,
				};
				if (status === 429 || status >= 500) {
					const retryAfter = parseRetryAfter(header(response.headers, 'retry-after'));
					return new RetryableFailure(`HTTP ${status}`, status, body, retryAfter);
				}
				throw serviceError(this.ctx, body, status, itemIndex, `URL: ${url}`);
			}
			return await consume(stream, header(response.headers, 'content-type')).catch((error: unknown) =>
				this.transportFailure(error, itemIndex),
			);
		});
	}

	/** A network failure is returned to be retried; a cancelled execution and anything else are final. */
	private transportFailure(error: unknown, itemIndex: number | undefined): RetryableFailure {
		const code = networkErrorCode(error);
		if (code === 'ERR_CANCELED' || cancelSignal(this.ctx)?.aborted) {
			throw new NodeOperationError(this.ctx.getNode(), `The execution was cancelled${itemSuffix(itemIndex)}`, {
				itemIndex,
			});
		}
		if (code) return new RetryableFailure(code);
		if (error instanceof NodeApiError || error instanceof NodeOperationError) throw error;
		// Never rethrow the raw error: its request options hold the Authorization header.
		throw new NodeOperationError(
			this.ctx.getNode(),
			`Request to the Generation Service failed: ${(error as Error)?.message ?? String(error)}${itemSuffix(itemIndex)}`,
			{ itemIndex },
		);
	}

	/** Runs `attempt` until it gives a value, waiting 1 s, 2 s, 4 s (or Retry-After) between tries. */
	private async withRetries<T>(
		itemIndex: number | undefined,
		attempt: () => Promise<T | RetryableFailure>,
	): Promise<T> {
		for (let retry = 0; ; retry++) {
			const outcome = await attempt();
			if (!(outcome instanceof RetryableFailure)) return outcome;
			if (retry >= RETRY_DELAYS_MS.length) throw this.finalFailure(outcome, itemIndex, retry);
			await waitOrCancel(this.ctx, outcome.retryAfterMs ?? RETRY_DELAYS_MS[retry], itemIndex);
		}
	}

	private finalFailure(failure: RetryableFailure, itemIndex: number | undefined, retries: number) {
		const tried = `Tried ${retries + 1} times (§7: retries after 1 s, 2 s and 4 s).`;
		if (failure.errorBody) return serviceError(this.ctx, failure.errorBody, failure.status, itemIndex, tried);
		// The code goes in the description: n8n replaces a message that names one with a generic text.
		return serviceError(
			this.ctx,
			{ code: 'network_error', message: `The Generation Service did not answer: ${NETWORK_FAILURES[failure.reason] ?? 'the connection failed'}` },
			undefined,
			itemIndex,
			`Network error: ${failure.reason}. ${tried}`,
		);
	}
}
