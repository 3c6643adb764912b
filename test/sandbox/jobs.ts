/**
 * Async jobs (§3, §4.6) and the completion webhook (§6).
 * Every job has its own timers, so any number of jobs run at the same time.
 */
import { type ClientRequest, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { nowIso, nowMs } from './common';
import { money } from './billing';
import type { Modality } from './catalog';

export type JobStatus = 'queued' | 'processing' | 'completed' | 'failed';

/** What a completed job adds to its body; `complete` charges and publishes the file. */
export interface JobOutput {
	url: string;
	cost: unknown;
	metadata?: Record<string, unknown>;
}

export interface JobSpec {
	id: string;
	modality: Modality;
	model: string;
	estimatedMicro: number;
	durationMs: number;
	webhookUrl?: string;
	/** Set when the job must fail (failNextJobs, `[sandbox:fail]`). */
	failReason?: string;
	/** Runs when the job's time is up; throwing fails the job with the error's message. */
	complete(): JobOutput;
}

interface Job extends JobSpec {
	status: JobStatus;
	createdAt: string;
	completedAt?: string;
	output?: JobOutput;
	error?: string;
	times: { submittedAt: number; startedAt?: number; finishedAt?: number };
}

export interface WebhookDelivery {
	jobId: string;
	url: string;
	status?: number;
	/** The first 1 KiB of the receiver's answer, so tests can see what a webhook endpoint replied. */
	responseBody?: string;
	error?: string;
	at: number;
}

const WEBHOOK_TIMEOUT_MS = 10_000;

export class Jobs {
	readonly deliveries: WebhookDelivery[] = [];
	private readonly jobs = new Map<string, Job>();
	private readonly timers = new Set<NodeJS.Timeout>();
	private readonly outbound = new Set<ClientRequest>();
	private stopped = false;

	/** queued → processing at 20 % of the run time → completed or failed at 100 %. */
	submit(spec: JobSpec): void {
		const job: Job = {
			...spec,
			status: 'queued',
			createdAt: nowIso(),
			times: { submittedAt: nowMs() },
		};
		this.jobs.set(job.id, job);
		this.later(Math.round(spec.durationMs * 0.2), () => {
			job.status = 'processing';
			job.times.startedAt = nowMs();
		});
		this.later(spec.durationMs, () => this.finish(job));
	}

	private finish(job: Job): void {
		job.times.startedAt ??= nowMs();
		try {
			if (job.failReason !== undefined) throw new Error(job.failReason);
			job.output = job.complete();
			job.status = 'completed';
		} catch (err) {
			job.status = 'failed';
			job.error = err instanceof Error ? err.message : String(err);
		}
		job.completedAt = nowIso();
		job.times.finishedAt = nowMs();
		if (job.webhookUrl) void this.deliver(job);
	}

	/** GET /v1/jobs/:id; a finished job's body is also the webhook payload (§6). */
	body(id: string): Record<string, unknown> | undefined {
		const job = this.jobs.get(id);
		if (!job) return undefined;
		const head = { id: job.id, status: job.status, model: job.model, modality: job.modality };
		if (job.status === 'completed') {
			const { url, cost, metadata } = job.output!;
			return {
				...head,
				url,
				cost,
				...(metadata ? { metadata } : {}),
				created_at: job.createdAt,
				completed_at: job.completedAt,
			};
		}
		if (job.status === 'failed') {
			const error = { code: 'generation_failed', message: job.error };
			return { ...head, error, created_at: job.createdAt, completed_at: job.completedAt };
		}
		return { ...head, estimated_cost: money(job.estimatedMicro), created_at: job.createdAt };
	}

	times(id: string) {
		const job = this.jobs.get(id);
		return job && { ...job.times };
	}

	async redeliver(id: string): Promise<void> {
		const job = this.jobs.get(id);
		if (!job) throw new Error(`No job ${id}`);
		if (!job.webhookUrl) throw new Error(`Job ${id} has no webhook_url`);
		if (job.status !== 'completed' && job.status !== 'failed')
			throw new Error(`Job ${id} is not finished`);
		await this.deliver(job);
	}

	/**
	 * One POST of the job body, no signature and no retry (§6 leaves both unshown), recorded in
	 * `deliveries` with the answer's status or the network error. Never rejects.
	 */
	private deliver(job: Job): Promise<void> {
		const url = job.webhookUrl!;
		const at = nowMs();
		const payload = JSON.stringify(this.body(job.id));
		return new Promise((resolve) => {
			let settled = false;
			const done = (result: { status?: number; responseBody?: string; error?: string }) => {
				if (settled) return;
				settled = true;
				this.outbound.delete(req);
				if (!this.stopped) this.deliveries.push({ jobId: job.id, url, ...result, at });
				resolve();
			};
			const send = url.startsWith('https:') ? httpsRequest : httpRequest;
			// agent: false — one connection per delivery, closed after, so nothing lingers after stop().
			const req = send(url, {
				method: 'POST',
				agent: false,
				timeout: WEBHOOK_TIMEOUT_MS,
				headers: {
					'Content-Type': 'application/json',
					'Content-Length': String(Buffer.byteLength(payload)),
					'User-Agent': 'generation-service-sandbox',
				},
			});
			this.outbound.add(req);
			req.on('response', (res) => {
				let responseBody = '';
				res.setEncoding('utf8');
				res.on('data', (chunk: string) => {
					if (responseBody.length < 1024) responseBody = (responseBody + chunk).slice(0, 1024);
				});
				res.on('end', () => done({ status: res.statusCode, responseBody }));
				res.on('error', (err) => done({ status: res.statusCode, error: err.message }));
			});
			req.on('timeout', () => req.destroy(new Error(`no answer within ${WEBHOOK_TIMEOUT_MS} ms`)));
			req.on('error', (err) => done({ error: err.message }));
			req.end(payload);
		});
	}

	private later(ms: number, fn: () => void): void {
		const timer = setTimeout(() => {
			this.timers.delete(timer);
			fn();
		}, ms);
		this.timers.add(timer);
	}

	stop(): void {
		this.stopped = true;
		for (const timer of this.timers) clearTimeout(timer);
		this.timers.clear();
		for (const req of this.outbound) req.destroy();
		this.outbound.clear();
	}
}
