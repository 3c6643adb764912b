/**
 * The sandbox: an in-process HTTP implementation of the Generation Service
 * (shared/spec/generation-service-api.md), for tests, benchmarks and `npm run sandbox`.
 * This file is the contract the tests rely on; the behaviour lives in one module per spec area.
 */
import type { Modality } from './catalog';
import type { Transaction } from './billing';
import type { WebhookDelivery } from './jobs';

export type { Modality } from './catalog';
export type { Transaction } from './billing';
export type { WebhookDelivery } from './jobs';
export { startSandbox } from './server';

export interface SandboxOptions {
	/** Default 0 (a random free port); main.ts uses 4010 (env SANDBOX_PORT). */
	port?: number;
	/** Default '127.0.0.1'. */
	host?: string;
	/** Seeded balance, default 100_000_000 ($100); recorded in the ledger as a top_up. */
	balanceMicro?: number;
	/** Seeded key value (default 'gs_test_' + 40 hex chars), with all four scopes of §5. */
	apiKey?: string;
	/** Async job run time; defaults video 3000, music 3000, voice 2000, threeD 4000. */
	jobDurationMs?: Partial<Record<Modality, number>>;
	/** Per API key, fixed one-minute window, default 600. */
	rateLimitPerMinute?: number;
	/** Padding target for output files (MediaSpec.sizeBytes), per modality. */
	outputSizeBytes?: Partial<Record<Modality, number>>;
	/** Default 1_000_000_000 ($1000). */
	organizationCapMicro?: number;
}

export interface RecordedRequest {
	seq: number;
	method: string;
	path: string;
	query: Record<string, string>;
	/** Lower-cased names, as received. */
	headers: Record<string, string>;
	/** Parsed JSON, or the raw string when it is not JSON, or undefined when empty. */
	body: unknown;
	/** ms since epoch with sub-ms precision. */
	receivedAt: number;
	/** Status answered; undefined for reset or stalled requests. */
	status?: number;
	/** Fault kind applied, if any. */
	fault?: string;
}

export interface FaultSpec {
	/** Prefix match on the URL path, e.g. '/v1/generations/image', '/files/', '/v1/jobs/'. */
	path: string;
	/** Default: any method. */
	method?: string;
	kind: 'status' | 'reset' | 'stall' | 'malformed';
	/** For kind 'status' (429, 500, 502, 503 or any); the body is a §7 error object. */
	status?: number;
	/** Retry-After header value sent with a status fault ('2' or an HTTP date). */
	retryAfter?: string;
	/** How many matching requests get the fault (default 1). */
	count?: number;
	/**
	 * 'before': the request is not processed (nothing created or charged).
	 * 'after': it is processed (charge recorded, idempotency entry stored) and only the answer breaks.
	 * Defaults: status → before; reset, stall, malformed → after.
	 */
	when?: 'before' | 'after';
	/** For 'stall': hold the answer this long, then send it normally (default: never answer). */
	stallMs?: number;
}

export interface Sandbox {
	/** 'http://127.0.0.1:PORT'; endpoints are baseUrl + '/v1/...'. */
	readonly baseUrl: string;
	/** The seeded key. */
	readonly apiKey: string;
	/** Every request received (API and files; control requests excluded), in order. */
	readonly requests: RecordedRequest[];
	requestsTo(method: string, pathPrefix: string): RecordedRequest[];
	/** All 'generation' transactions, oldest first. */
	charges(): Transaction[];
	chargesFor(idempotencyKey: string): Transaction[];
	/** The whole ledger, newest first. */
	transactions(): Transaction[];
	balanceMicro(): number;
	/** Sets the balance directly (no ledger entry). */
	setBalance(micro: number): void;
	/** Ledger top_up (cost.micro negative, §2.7) and balance += micro. */
	topUp(micro: number): Transaction;
	/** Ledger refund of a generation. */
	refund(transactionId: string): Transaction;
	/** Project null = no cap; organization null = back to the configured default (it is always an object in §2.4). */
	setCap(level: 'organization' | 'project', micro: number | null): void;
	createKey(opts: { name: string; scopes: string[]; capTotalMicro?: number | null }): {
		id: string;
		key: string;
	};
	fault(spec: FaultSpec): void;
	clearFaults(): void;
	configure(
		opts: Pick<SandboxOptions, 'jobDurationMs' | 'outputSizeBytes' | 'rateLimitPerMinute'>,
	): void;
	/** The next `count` async jobs end 'failed' with that reason. */
	failNextJobs(count: number, reason?: string): void;
	/** The job body exactly as GET /v1/jobs/:id returns it. */
	job(id: string): Record<string, unknown> | undefined;
	/** ms since epoch, for overlap tests. */
	jobTimes(
		id: string,
	): { submittedAt: number; startedAt?: number; finishedAt?: number } | undefined;
	/** Each finished job's webhook POST (and redelivery): the answer's status or the network error. */
	webhookDeliveries: WebhookDelivery[];
	/** POSTs the job body to its webhook_url again (for dedupe tests). */
	redeliver(jobId: string): Promise<void>;
	/**
	 * Past 'generation' transactions spread over the last `days` UTC days (ending with endDate,
	 * default today), with real models and prices, charged to the seeded key. The balance is unchanged.
	 */
	seedHistory(opts: {
		count: number;
		days: number;
		modality?: Modality;
		endDate?: string;
	}): Transaction[];
	/** Clears `requests` and `webhookDeliveries`. */
	resetRecording(): void;
	/** Closes the server, destroys open sockets (stalled ones too) and clears timers. */
	stop(): Promise<void>;
}
