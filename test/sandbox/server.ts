/**
 * HTTP: routing, authentication and scopes (§5), rate limiting (§8), faults, request recording and
 * the control API (/_sandbox/...). The areas behind the routes live in their own modules.
 */
import {
	createServer,
	type IncomingHttpHeaders,
	type IncomingMessage,
	type Server,
	type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import {
	type Answer,
	ApiError,
	invalid,
	isObject,
	notFound,
	nowIso,
	nowMs,
	ok,
	quote,
} from './common';
import { Billing, Idempotency, type Transaction } from './billing';
import { type Modality, VOICES, modelsBody } from './catalog';
import { Files, sendFile } from './files';
import { type Caller, type GenerationEnv, generate } from './generations';
import { Jobs } from './jobs';
import { type KeyRecord, Keys } from './keys';
import { dailyAnswer, seedHistory, transactionsAnswer, usageAnswer } from './usage';
import type { FaultSpec, RecordedRequest, Sandbox, SandboxOptions } from './index';

const DEFAULT_JOB_MS: Record<Modality, number> = {
	image: 1000,
	video: 3000,
	music: 3000,
	voice: 2000,
	threeD: 4000,
};
const WINDOW_MS = 60_000;
const FAULT_KINDS = ['status', 'reset', 'stall', 'malformed'];
const DEFAULT_FAIL_REASON = 'Generation failed (simulated by the sandbox).';
const PROMPT_FAIL_MARKER = '[sandbox:fail]';

interface Route {
	method: string;
	path: RegExp;
	/** §5: generation needs `generate`; credits and usage need `credits:read`; others any valid key. */
	scope?: 'generate' | 'credits:read';
	run(
		call: Caller & { body: unknown; query: URLSearchParams },
		params: string[],
	): Answer | Promise<Answer>;
}

type Config = Required<Pick<SandboxOptions, 'rateLimitPerMinute'>> & {
	jobDurationMs: Record<Modality, number>;
	outputSizeBytes: Partial<Record<Modality, number>>;
};

/** Runs an area's handler and turns its ApiError into the §7 answer. */
async function attempt(work: () => Answer | Promise<Answer>): Promise<Answer> {
	try {
		return await work();
	} catch (err) {
		if (err instanceof ApiError) return err.answer();
		throw err;
	}
}

function readBody(req: IncomingMessage): Promise<Buffer> {
	return new Promise((resolve, reject) => {
		const chunks: Buffer[] = [];
		req.on('data', (chunk: Buffer) => chunks.push(chunk));
		req.on('end', () => resolve(Buffer.concat(chunks)));
		req.on('error', reject);
	});
}

const header = (headers: IncomingHttpHeaders, name: string) => {
	const value = headers[name];
	return Array.isArray(value) ? value.join(', ') : value;
};

/** A path parameter; a malformed %-escape is kept as sent (it then matches nothing). */
function decodeSegment(segment: string): string {
	try {
		return decodeURIComponent(segment);
	} catch {
		return segment;
	}
}

const bearer = (authorization: string | undefined) =>
	/^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];

class SandboxServer implements Sandbox {
	baseUrl = '';
	readonly apiKey: string;
	readonly requests: RecordedRequest[] = [];

	private readonly config: Config;
	private readonly defaultOrganizationCap: number;
	private readonly billing: Billing;
	private readonly keys: Keys;
	private readonly jobs = new Jobs();
	private readonly files = new Files(() => this.baseUrl);
	private readonly idempotency = new Idempotency();
	private readonly server: Server;
	private readonly routes: Route[];
	private faults: Array<{ spec: FaultSpec; left: number }> = [];
	private readonly windows = new Map<string, { start: number; count: number }>();
	private readonly holds = new Set<NodeJS.Timeout>();
	private failNext = { count: 0, reason: DEFAULT_FAIL_REASON };
	private seq = 0;
	private stopped = false;

	constructor(private readonly options: SandboxOptions) {
		this.config = {
			rateLimitPerMinute: options.rateLimitPerMinute ?? 600,
			jobDurationMs: { ...DEFAULT_JOB_MS, ...options.jobDurationMs },
			outputSizeBytes: { ...options.outputSizeBytes },
		};
		this.defaultOrganizationCap = options.organizationCapMicro ?? 1_000_000_000;
		this.billing = new Billing(options.balanceMicro ?? 100_000_000, this.defaultOrganizationCap);
		this.keys = new Keys(options.apiKey);
		this.apiKey = this.keys.seeded.key;
		for (const voice of VOICES) {
			const seed = [...voice.name].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7);
			this.files.add(`voice_${voice.name}`, { format: 'mp3', seed, durationSeconds: 3 });
		}
		this.routes = this.buildRoutes();
		this.server = createServer((req, res) => {
			this.onRequest(req, res).catch((err: Error) => {
				if (res.headersSent) return void res.destroy();
				this.send(
					req,
					res,
					new ApiError(500, 'server_error', `Sandbox error: ${err.message}`).answer(),
				);
			});
		});
	}

	private get env(): GenerationEnv {
		return {
			billing: this.billing,
			jobs: this.jobs,
			files: this.files,
			jobDurationMs: (m) => this.config.jobDurationMs[m],
			outputSizeBytes: (m) => this.config.outputSizeBytes[m],
			nextFailure: (prompt) => {
				if (prompt.includes(PROMPT_FAIL_MARKER))
					return `The prompt asked the sandbox to fail this job (${PROMPT_FAIL_MARKER}).`;
				if (this.failNext.count <= 0) return undefined;
				this.failNext.count--;
				return this.failNext.reason;
			},
		};
	}

	private buildRoutes(): Route[] {
		const { billing, jobs, keys } = this;
		return [
			{
				method: 'POST',
				path: /^\/v1\/generations\/(image|video|music|voice|threeD)$/,
				scope: 'generate',
				run: (call, [modality]) =>
					this.idempotency.run(call.key.id, call.idempotencyKey, () =>
						attempt(() => generate(modality as Modality, call.body, this.env, call)),
					),
			},
			{
				method: 'GET',
				path: /^\/v1\/jobs\/([^/]+)$/,
				run: (_call, [id]) => {
					const body = jobs.body(id);
					if (!body) throw notFound(`No job with id ${quote(id)}.`);
					return ok(body);
				},
			},
			{
				method: 'GET',
				path: /^\/v1\/voices$/,
				run: () =>
					ok(VOICES.map((v) => ({ ...v, preview_url: this.files.url(`voice_${v.name}`, 'mp3') }))),
			},
			{
				method: 'GET',
				path: /^\/v1\/models$/,
				run: (call) => ok(modelsBody(call.query.get('modality') ?? undefined)),
			},
			{
				method: 'GET',
				path: /^\/v1\/credits$/,
				scope: 'credits:read',
				run: (call) => ok(billing.creditsBody(call.key)),
			},
			{ method: 'GET', path: /^\/v1\/api-keys$/, run: () => keys.listAnswer() },
			{ method: 'POST', path: /^\/v1\/api-keys$/, run: (call) => keys.createAnswer(call.body) },
			{
				method: 'DELETE',
				path: /^\/v1\/api-keys\/([^/]+)$/,
				run: (_call, [id]) => keys.deleteAnswer(id),
			},
			{
				method: 'GET',
				path: /^\/v1\/usage$/,
				scope: 'credits:read',
				run: (call) => usageAnswer(billing, call.query),
			},
			{
				method: 'GET',
				path: /^\/v1\/usage\/transactions$/,
				scope: 'credits:read',
				run: (call) => transactionsAnswer(billing, call.query),
			},
			{
				method: 'GET',
				path: /^\/v1\/usage\/daily$/,
				scope: 'credits:read',
				run: (call) => dailyAnswer(billing, call.query),
			},
		];
	}

	async listen(): Promise<void> {
		const host = this.options.host ?? '127.0.0.1';
		await new Promise<void>((resolve, reject) => {
			this.server.once('error', reject);
			this.server.listen(this.options.port ?? 0, host, () => {
				this.server.off('error', reject);
				resolve();
			});
		});
		const { port } = this.server.address() as AddressInfo;
		const urlHost =
			host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
		this.baseUrl = `http://${urlHost}:${port}`;
	}

	// ---- one request ----

	private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
		const receivedAt = nowMs();
		const method = req.method ?? 'GET';
		const url = new URL(req.url ?? '/', 'http://sandbox');
		const raw = await readBody(req);
		if (url.pathname === '/_sandbox' || url.pathname.startsWith('/_sandbox/')) {
			this.send(req, res, await attempt(() => this.control(method, url, raw)));
			return;
		}
		const record = this.record(req, method, url, raw, receivedAt);
		res.on('finish', () => (record.status = res.statusCode));

		const produce = () =>
			url.pathname.startsWith('/files/')
				? attempt(() => this.files.answer(url.pathname))
				: this.api(method, url, req.headers, raw);
		const fault = this.takeFault(method, url.pathname);
		if (!fault) {
			this.send(req, res, await produce());
			return;
		}

		record.fault = fault.kind;
		const when = fault.when ?? (fault.kind === 'status' ? 'before' : 'after');
		// 'after': the request is processed (charged, idempotency stored); only the answer breaks.
		const answer = when === 'after' ? await produce() : undefined;
		if (fault.kind === 'status') {
			this.send(req, res, this.faultAnswer(fault, url.pathname, req.headers));
		} else if (fault.kind === 'malformed') {
			const full = answer?.body === undefined ? '' : JSON.stringify(answer.body);
			const text = full.length > 1 ? full.slice(0, Math.floor(full.length / 2)) : '{"id": "gen_';
			res.writeHead(200, {
				...answer?.headers,
				'Content-Type': 'application/json',
				'Content-Length': String(Buffer.byteLength(text)),
			});
			res.end(text);
		} else if (fault.kind === 'reset') {
			// A download breaks in the middle: headers and part of the body, then the connection drops.
			if (answer?.file)
				sendFile(
					req,
					res,
					answer,
					Math.max(1, Math.min(64 * 1024, Math.floor(answer.file.size / 2))),
				);
			else req.socket.destroy();
		} else if (fault.stallMs !== undefined) {
			const stallMs = fault.stallMs;
			this.hold(stallMs, async () => this.send(req, res, answer ?? (await produce())));
		}
		// A stall without stallMs never answers: the socket stays open until the client gives up or stop().
	}

	/** /v1: authentication, rate limit, routing, scopes, body parsing. */
	private async api(
		method: string,
		url: URL,
		headers: IncomingHttpHeaders,
		raw: Buffer,
	): Promise<Answer> {
		const path = url.pathname;
		if (!path.startsWith('/v1/')) return notFound(`No route for ${method} ${path}.`).answer();
		const token = bearer(header(headers, 'authorization'));
		const key = token === undefined ? undefined : this.keys.authenticate(token);
		if (!key) {
			const message =
				token === undefined
					? 'Missing API key: send the header Authorization: Bearer <API_KEY>.'
					: 'Invalid API key: it is unknown or has been revoked.';
			return new ApiError(401, 'unauthorized', message).answer();
		}
		key.lastUsedAt = nowIso();
		const limit = this.rateLimit(key);
		const answer =
			limit.retryAfter === undefined
				? await attempt(() => this.route(method, url, headers, raw, key))
				: {
						...new ApiError(
							429,
							'rate_limited',
							`Rate limit of ${this.config.rateLimitPerMinute} requests per minute reached; retry after ${limit.retryAfter} s.`,
						).answer(),
						headers: { 'Retry-After': String(limit.retryAfter) },
					};
		return {
			...answer,
			headers: { ...answer.headers, 'X-RateLimit-Remaining': String(limit.remaining) },
		};
	}

	private route(
		method: string,
		url: URL,
		headers: IncomingHttpHeaders,
		raw: Buffer,
		key: KeyRecord,
	) {
		let params: string[] = [];
		const route = this.routes.find((r) => {
			const match = r.method === method ? r.path.exec(url.pathname) : null;
			if (match) params = match.slice(1).map(decodeSegment);
			return match !== null;
		});
		if (!route) throw notFound(`No route for ${method} ${url.pathname}.`);
		if (route.scope && !key.scopes.includes(route.scope)) {
			throw new ApiError(
				403,
				'insufficient_scope',
				`This API key lacks the scope ${route.scope}, needed for ${method} ${url.pathname}.`,
			);
		}
		let body: unknown;
		if (raw.length > 0 && method !== 'GET' && method !== 'DELETE') {
			try {
				body = JSON.parse(raw.toString('utf8'));
			} catch (err) {
				throw invalid(`The body is not valid JSON: ${(err as Error).message}`);
			}
		}
		const idempotencyKey = header(headers, 'idempotency-key');
		return route.run({ key, body, query: url.searchParams, idempotencyKey }, params);
	}

	/** A fixed one-minute window per key; every request in it counts, refused ones too. */
	private rateLimit(key: KeyRecord): { remaining: number; retryAfter?: number } {
		const now = Date.now();
		let window = this.windows.get(key.id);
		if (!window || now - window.start >= WINDOW_MS) {
			window = { start: now, count: 0 };
			this.windows.set(key.id, window);
		}
		window.count++;
		const limit = this.config.rateLimitPerMinute;
		if (window.count <= limit) return { remaining: limit - window.count };
		return {
			remaining: 0,
			retryAfter: Math.max(1, Math.ceil((window.start + WINDOW_MS - now) / 1000)),
		};
	}

	private record(
		req: IncomingMessage,
		method: string,
		url: URL,
		raw: Buffer,
		receivedAt: number,
	): RecordedRequest {
		const headers: Record<string, string> = {};
		for (const name of Object.keys(req.headers)) headers[name] = header(req.headers, name) ?? '';
		let body: unknown;
		if (raw.length > 0) {
			const text = raw.toString('utf8');
			try {
				body = JSON.parse(text);
			} catch {
				body = text;
			}
		}
		const record: RecordedRequest = {
			seq: ++this.seq,
			method,
			path: url.pathname,
			query: Object.fromEntries(url.searchParams),
			headers,
			body,
			receivedAt,
		};
		this.requests.push(record);
		return record;
	}

	private send(req: IncomingMessage, res: ServerResponse, answer: Answer): void {
		if (res.destroyed || res.headersSent) return;
		if (answer.file) return sendFile(req, res, answer);
		if (answer.body === undefined) {
			res.writeHead(answer.status, answer.headers);
			res.end();
			return;
		}
		const text = JSON.stringify(answer.body);
		res.writeHead(answer.status, {
			'Content-Type': 'application/json',
			'Content-Length': String(Buffer.byteLength(text)),
			...answer.headers,
		});
		res.end(text);
	}

	// ---- faults ----

	/** The first registered fault that matches, consumed. */
	private takeFault(method: string, path: string): FaultSpec | undefined {
		const entry = this.faults.find(
			(f) =>
				f.left > 0 &&
				path.startsWith(f.spec.path) &&
				(!f.spec.method || f.spec.method.toUpperCase() === method),
		);
		if (!entry) return undefined;
		entry.left--;
		this.faults = this.faults.filter((f) => f.left > 0);
		return entry.spec;
	}

	/** A §7 error as if from a gateway in front of the service. */
	private faultAnswer(fault: FaultSpec, path: string, headers: IncomingHttpHeaders): Answer {
		const status = fault.status ?? 500;
		const codes: Record<number, string> = {
			400: 'invalid_request',
			401: 'unauthorized',
			403: 'insufficient_scope',
			404: 'not_found',
			429: 'rate_limited',
		};
		const code = codes[status] ?? (status >= 500 ? 'server_error' : 'error');
		const message =
			status === 429
				? 'Too many requests (simulated by a sandbox fault).'
				: `Simulated ${status} (sandbox fault).`;
		const answer = new ApiError(status, code, message).answer();
		const out: Record<string, string> = {};
		if (fault.retryAfter !== undefined) out['Retry-After'] = fault.retryAfter;
		if (path.startsWith('/v1/')) {
			// Every /v1 answer carries X-RateLimit-Remaining; a fault does not use up the key's window.
			const key = this.keys.authenticate(bearer(header(headers, 'authorization')) ?? '');
			const window = key && this.windows.get(key.id);
			const used = window && Date.now() - window.start < WINDOW_MS ? window.count : 0;
			if (status === 429) out['X-RateLimit-Remaining'] = '0';
			else if (key)
				out['X-RateLimit-Remaining'] = String(Math.max(0, this.config.rateLimitPerMinute - used));
		}
		return { ...answer, headers: out };
	}

	private hold(ms: number, fn: () => Promise<void>): void {
		const timer = setTimeout(() => {
			this.holds.delete(timer);
			fn().catch(() => undefined);
		}, ms);
		this.holds.add(timer);
	}

	// ---- control API (no auth, not recorded) ----

	private async control(method: string, url: URL, raw: Buffer): Promise<Answer> {
		let body: Record<string, unknown> = {};
		if (raw.length > 0) {
			try {
				const parsed: unknown = JSON.parse(raw.toString('utf8'));
				if (isObject(parsed)) body = parsed;
			} catch {
				throw invalid('The control API takes JSON bodies.');
			}
		}
		const route = `${method} ${url.pathname.slice('/_sandbox'.length)}`;
		const query = url.searchParams;
		const num = (name: string) => body[name] as number;
		try {
			if (route === 'GET /state') {
				return ok({
					balanceMicro: this.balanceMicro(),
					apiKey: this.apiKey,
					charges: this.charges(),
					webhookDeliveries: this.webhookDeliveries,
					requestCount: this.requests.length,
				});
			}
			if (route === 'GET /requests')
				return ok(this.requestsTo(query.get('method') ?? '', query.get('path') ?? ''));
			if (route === 'GET /transactions') return ok(this.transactions());
			if (route === 'POST /faults')
				return ok((this.fault(body as unknown as FaultSpec), { faults: this.faults.length }));
			if (route === 'DELETE /faults') return ok((this.clearFaults(), { faults: 0 }));
			if (route === 'POST /config') return ok((this.configure(body), { ok: true }));
			if (route === 'POST /balance')
				return ok((this.setBalance(num('micro')), { balanceMicro: this.balanceMicro() }));
			if (route === 'POST /top-up') return ok(this.topUp(num('micro')));
			if (route === 'POST /refund') return ok(this.refund(String(body.transactionId)));
			if (route === 'POST /caps') {
				this.setCap(body.level as 'organization' | 'project', body.micro as number | null);
				return ok({ ok: true });
			}
			if (route === 'POST /keys')
				return ok(this.createKey(body as Parameters<Sandbox['createKey']>[0]));
			if (route === 'POST /fail-next-jobs') {
				return ok(
					(this.failNextJobs(num('count'), body.reason as string | undefined), { ok: true }),
				);
			}
			if (route === 'POST /history')
				return ok(this.seedHistory(body as Parameters<Sandbox['seedHistory']>[0]));
			if (route === 'POST /reset-recording') return ok((this.resetRecording(), { ok: true }));
			const jobMatch = /^(GET|POST) \/jobs\/([^/]+)(\/redeliver)?$/.exec(route);
			if (jobMatch && jobMatch[1] === 'POST' && jobMatch[3]) {
				await this.redeliver(jobMatch[2]);
				return ok({
					ok: true,
					delivery: this.webhookDeliveries[this.webhookDeliveries.length - 1],
				});
			}
			if (jobMatch && jobMatch[1] === 'GET' && !jobMatch[3] && this.job(jobMatch[2])) {
				return ok({ job: this.job(jobMatch[2]), times: this.jobTimes(jobMatch[2]) });
			}
		} catch (err) {
			if (err instanceof ApiError) throw err;
			throw invalid((err as Error).message);
		}
		throw notFound(`No control route ${route}.`);
	}

	// ---- the Sandbox interface ----

	get webhookDeliveries() {
		return this.jobs.deliveries;
	}

	requestsTo(method: string, pathPrefix: string): RecordedRequest[] {
		const wanted = method.toUpperCase();
		return this.requests.filter(
			(r) => (!wanted || wanted === '*' || r.method === wanted) && r.path.startsWith(pathPrefix),
		);
	}

	charges(): Transaction[] {
		return this.billing.charges();
	}

	chargesFor(idempotencyKey: string): Transaction[] {
		return this.charges().filter((t) => t.idempotency_key === idempotencyKey);
	}

	transactions(): Transaction[] {
		return this.billing.transactions();
	}

	balanceMicro(): number {
		return this.billing.balance;
	}

	setBalance(micro: number): void {
		if (!Number.isSafeInteger(micro)) throw new Error('setBalance needs an integer (microdollars)');
		this.billing.balance = micro;
	}

	topUp(micro: number): Transaction {
		return this.billing.topUp(micro);
	}

	refund(transactionId: string): Transaction {
		return this.billing.refund(transactionId, this.keys);
	}

	setCap(level: 'organization' | 'project', micro: number | null): void {
		if (micro !== null && !(Number.isSafeInteger(micro) && micro >= 0))
			throw new Error('A cap is a non-negative integer or null');
		if (level === 'organization')
			this.billing.organizationCapMicro = micro ?? this.defaultOrganizationCap;
		else if (level === 'project') this.billing.projectCapMicro = micro;
		else
			throw new Error(
				`Unknown cap level ${String(level)}; use organization or project (key caps: createKey)`,
			);
	}

	createKey(opts: { name: string; scopes: string[]; capTotalMicro?: number | null }): {
		id: string;
		key: string;
	} {
		const record = this.keys.create({
			name: opts.name,
			scopes: opts.scopes,
			cap_total_micro: opts.capTotalMicro,
		});
		return { id: record.id, key: record.key };
	}

	fault(spec: FaultSpec): void {
		if (typeof spec?.path !== 'string' || !FAULT_KINDS.includes(spec.kind)) {
			throw new Error(`A fault needs a path and a kind (${FAULT_KINDS.join(', ')})`);
		}
		this.faults.push({ spec: { ...spec }, left: spec.count ?? 1 });
	}

	clearFaults(): void {
		this.faults = [];
	}

	configure(
		opts: Pick<SandboxOptions, 'jobDurationMs' | 'outputSizeBytes' | 'rateLimitPerMinute'>,
	): void {
		Object.assign(this.config.jobDurationMs, opts.jobDurationMs);
		Object.assign(this.config.outputSizeBytes, opts.outputSizeBytes);
		if (opts.rateLimitPerMinute !== undefined)
			this.config.rateLimitPerMinute = opts.rateLimitPerMinute;
	}

	failNextJobs(count: number, reason?: string): void {
		this.failNext = { count, reason: reason ?? DEFAULT_FAIL_REASON };
	}

	job(id: string): Record<string, unknown> | undefined {
		return this.jobs.body(id);
	}

	jobTimes(id: string) {
		return this.jobs.times(id);
	}

	redeliver(jobId: string): Promise<void> {
		return this.jobs.redeliver(jobId);
	}

	seedHistory(opts: {
		count: number;
		days: number;
		modality?: Modality;
		endDate?: string;
	}): Transaction[] {
		return seedHistory(this.billing, this.keys.seeded.id, opts);
	}

	resetRecording(): void {
		this.requests.length = 0;
		this.jobs.deliveries.length = 0;
	}

	async stop(): Promise<void> {
		if (this.stopped) return;
		this.stopped = true;
		this.jobs.stop();
		for (const timer of this.holds) clearTimeout(timer);
		this.holds.clear();
		await new Promise<void>((resolve) => {
			this.server.close(() => resolve());
			// Keep-alive, stalled and streaming connections too: nothing may outlive stop().
			this.server.closeAllConnections();
		});
	}
}

export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
	const sandbox = new SandboxServer(options);
	await sandbox.listen();
	return sandbox;
}
