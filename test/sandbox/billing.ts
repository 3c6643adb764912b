/**
 * Billing: balance (§2.4), spending caps (§5), the ledger (§2.7), charges, and idempotent replay (§7 rule 1).
 * All amounts are integer microdollars.
 */
import { ApiError, type Answer, newId, nowIso } from './common';
import type { Modality } from './catalog';
import type { KeyRecord } from './keys';

export interface Transaction {
	id: string;
	type: 'generation' | 'top_up' | 'refund';
	model?: string;
	modality?: Modality;
	cost: { micro: number; display: string };
	status: 'completed';
	created_at: string;
	/** Internal: the key charged (not in API responses). */
	key_id?: string;
	/** Internal: the Idempotency-Key of the request (not in API responses). */
	idempotency_key?: string;
}

/** `$0.003000`: dollars with 6 decimals, so every microdollar shows; `-$1.000000` when negative. */
export function display(micro: number): string {
	const abs = Math.abs(Math.round(micro));
	const cents = String(abs % 1_000_000).padStart(6, '0');
	return `${micro < 0 ? '-' : ''}$${Math.floor(abs / 1_000_000)}.${cents}`;
}
export const money = (micro: number) => ({ micro, display: display(micro) });
export const usd = (micro: number) => ({ micro, display: display(micro), currency: 'USD' });

const describe = (micro: number) => `${display(micro)} (${micro} microdollars)`;

export class Billing {
	balance: number;
	organizationCapMicro: number;
	projectCapMicro: number | null = null;
	/** Everything charged (minus refunds): the usage of the organization and of the one project. */
	spentMicro = 0;
	/** Append-only, in insertion order; the index breaks ties between equal timestamps. */
	private readonly ledger: Transaction[] = [];

	constructor(balanceMicro: number, organizationCapMicro: number) {
		this.balance = 0;
		this.organizationCapMicro = organizationCapMicro;
		this.topUp(balanceMicro);
	}

	/** Throws the 402 a generation of this price would get now (§7), or returns. */
	check(priceMicro: number, key: KeyRecord): void {
		if (priceMicro > this.balance) {
			throw new ApiError(
				402,
				'insufficient_credits',
				`Insufficient credits: this request needs ${describe(priceMicro)} but the available balance is ${describe(this.balance)}.`,
				{ required_micro: priceMicro, available_micro: this.balance },
			);
		}
		const caps: Array<[string, number | null, number]> = [
			['organization', this.organizationCapMicro, this.spentMicro],
			['project', this.projectCapMicro, this.spentMicro],
			['key', key.capTotalMicro, key.usedMicro],
		];
		for (const [level, cap, used] of caps) {
			if (cap === null || used + priceMicro <= cap) continue;
			throw new ApiError(
				402,
				'spending_cap_reached',
				`Spending cap reached: the ${level} cap is ${describe(cap)}, ${display(used)} of it is used, and this request needs ${describe(priceMicro)}.`,
				{
					cap: {
						level,
						micro: cap,
						display: display(cap),
						used_micro: used,
						required_micro: priceMicro,
					},
				},
			);
		}
	}

	/** A completed generation: one ledger entry, balance and caps updated. */
	charge(c: {
		id: string;
		model: string;
		modality: Modality;
		micro: number;
		key: KeyRecord;
		idempotencyKey?: string;
	}): Transaction {
		this.balance -= c.micro;
		this.spentMicro += c.micro;
		c.key.usedMicro += c.micro;
		return this.record({
			id: c.id,
			type: 'generation',
			model: c.model,
			modality: c.modality,
			cost: money(c.micro),
			status: 'completed',
			created_at: nowIso(),
			key_id: c.key.id,
			...(c.idempotencyKey === undefined ? {} : { idempotency_key: c.idempotencyKey }),
		});
	}

	/** Money in is negative in the ledger (§2.7: "may be negative for a top-up"). */
	topUp(micro: number): Transaction {
		if (!Number.isInteger(micro) || micro <= 0) throw new Error('topUp needs a positive integer');
		this.balance += micro;
		return this.record({
			id: newId('top_'),
			type: 'top_up',
			cost: money(-micro),
			status: 'completed',
			created_at: nowIso(),
		});
	}

	/** Gives a generation's cost back: balance and cap usage; the refund carries the generation's model. */
	refund(transactionId: string, keys: { byId(id: string): KeyRecord | undefined }): Transaction {
		const charged = this.ledger.find((t) => t.id === transactionId && t.type === 'generation');
		if (!charged) throw new Error(`No generation transaction ${transactionId}`);
		if (this.ledger.some((t) => t.type === 'refund' && t.id === 'ref_' + transactionId)) {
			throw new Error(`Transaction ${transactionId} is already refunded`);
		}
		const micro = charged.cost.micro;
		this.balance += micro;
		this.spentMicro = Math.max(0, this.spentMicro - micro);
		const key = charged.key_id ? keys.byId(charged.key_id) : undefined;
		if (key) key.usedMicro = Math.max(0, key.usedMicro - micro);
		return this.record({
			id: 'ref_' + transactionId,
			type: 'refund',
			model: charged.model,
			modality: charged.modality,
			cost: money(-micro),
			status: 'completed',
			created_at: nowIso(),
		});
	}

	/** Adds a transaction as is (seeded history: no balance change). */
	record(tx: Transaction): Transaction {
		this.ledger.push(tx);
		return { ...tx };
	}

	/** The ledger newest first, each with its insertion index (the tie-breaker pagination needs). */
	ordered(): Array<{ tx: Transaction; seq: number }> {
		return this.ledger
			.map((tx, seq) => ({ tx, seq }))
			.sort((a, b) => b.tx.created_at.localeCompare(a.tx.created_at) || b.seq - a.seq);
	}

	transactions(): Transaction[] {
		return this.ordered().map(({ tx }) => ({ ...tx }));
	}

	/** Generations, oldest first. */
	charges(): Transaction[] {
		return this.transactions()
			.filter((t) => t.type === 'generation')
			.reverse();
	}

	/** GET /v1/credits (§2.4); caps.key is the calling key's cap. */
	creditsBody(key: KeyRecord) {
		const cap = (micro: number | null, used: number) =>
			micro === null ? null : { micro, display: display(micro), used_micro: used };
		return {
			balance: usd(this.balance),
			caps: {
				organization: cap(this.organizationCapMicro, this.spentMicro),
				project: cap(this.projectCapMicro, this.spentMicro),
				key: cap(key.capTotalMicro, key.usedMicro),
			},
		};
	}
}

/**
 * §7 rule 1, keyed by (API key, Idempotency-Key). Successful answers are kept and replayed as they
 * were; a duplicate that arrives while the first is in progress waits for it and gets its answer.
 * Errors are not kept, so a request refused with 400 or 402 can be sent again once fixed.
 */
const replay = (a: Answer): Answer => ({
	...a,
	headers: { ...a.headers, 'Idempotent-Replayed': 'true' },
});

export class Idempotency {
	private readonly done = new Map<string, Answer>();
	private readonly pending = new Map<string, Promise<Answer>>();

	async run(
		keyId: string,
		idempotencyKey: string | undefined,
		work: () => Promise<Answer>,
	): Promise<Answer> {
		if (idempotencyKey === undefined) return work();
		const id = `${keyId}\n${idempotencyKey}`;
		// Both looks are synchronous: no other request can slip in between them and pending.set.
		const stored = this.done.get(id);
		if (stored) return replay(stored);
		const inProgress = this.pending.get(id);
		if (inProgress) return replay(await inProgress);
		const first = work();
		this.pending.set(id, first);
		try {
			const answer = await first;
			if (answer.status >= 200 && answer.status < 300) this.done.set(id, answer);
			return answer;
		} finally {
			this.pending.delete(id);
		}
	}
}
