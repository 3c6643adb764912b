/** Usage reports over the ledger (§2.7–§2.9, §4.12–§4.14) and seeded history for tests and demos. */
import { type Answer, invalid, newId, ok, quote } from './common';
import { type Billing, type Transaction, money, usd } from './billing';
import { MODALITIES, MODELS, type Modality, typicalPriceMicro } from './catalog';

const DAY_MS = 86_400_000;
const TYPES = ['generation', 'top_up', 'refund'];
const MAX_DAILY_RANGE_DAYS = 366;

/** A transaction as the API shows it: without the sandbox's internal key and idempotency fields. */
export function publicTransaction(tx: Transaction) {
	const { key_id: _key, idempotency_key: _idempotency, ...shown } = tx;
	return shown;
}

// The cursor names the last transaction of the page by its position in the order (time, then
// insertion), so later transactions do not shift the next page. base64url keeps it opaque.
const encodeCursor = (createdAt: string, seq: number) =>
	Buffer.from(JSON.stringify([createdAt, seq])).toString('base64url');

function decodeCursor(cursor: string): [string, number] {
	try {
		const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString());
		if (Array.isArray(value) && typeof value[0] === 'string' && Number.isInteger(value[1]))
			return [value[0], value[1]];
	} catch {
		// reported below
	}
	throw invalid(
		`cursor ${quote(cursor)} is not valid; pass the cursor returned by the previous page.`,
	);
}

/** GET /v1/usage/transactions (§4.13): newest first, filtered, paginated. */
export function transactionsAnswer(billing: Billing, query: URLSearchParams): Answer {
	const type = query.get('type');
	if (type !== null && !TYPES.includes(type))
		throw invalid(`type must be one of ${TYPES.join(', ')}; got ${quote(type)}.`);
	const modality = query.get('modality');
	if (modality !== null && !MODALITIES.includes(modality as Modality)) {
		throw invalid(`modality must be one of ${MODALITIES.join(', ')}; got ${quote(modality)}.`);
	}
	const limitText = query.get('limit');
	const limit = limitText === null ? 20 : /^\d+$/.test(limitText) ? Number(limitText) : NaN;
	if (!(limit >= 1 && limit <= 100))
		throw invalid(`limit must be an integer from 1 to 100; got ${quote(limitText)}.`);
	const cursorText = query.get('cursor');
	const after = cursorText ? decodeCursor(cursorText) : undefined;

	const matching = billing
		.ordered()
		.filter(({ tx }) => (!type || tx.type === type) && (!modality || tx.modality === modality))
		.filter(
			({ tx, seq }) =>
				!after || tx.created_at < after[0] || (tx.created_at === after[0] && seq < after[1]),
		);
	const page = matching.slice(0, limit);
	const hasMore = matching.length > limit;
	const last = page[page.length - 1];
	return ok({
		transactions: page.map(({ tx }) => publicTransaction(tx)),
		has_more: hasMore,
		cursor: hasMore ? encodeCursor(last.tx.created_at, last.seq) : null,
	});
}

/** A required YYYY-MM-DD query date that exists in the calendar. */
function dateParam(query: URLSearchParams, name: string): string {
	const value = query.get(name);
	if (!value) throw invalid(`${name} is required: a date as YYYY-MM-DD.`);
	if (!isDate(value)) throw invalid(`${name} must be a date as YYYY-MM-DD; got ${quote(value)}.`);
	return value;
}

const isDate = (value: string) =>
	/^\d{4}-\d{2}-\d{2}$/.test(value) &&
	new Date(value + 'T00:00:00Z').toISOString().startsWith(value);

function dateRange(query: URLSearchParams): { from: string; to: string } {
	const from = dateParam(query, 'from');
	const to = dateParam(query, 'to');
	if (from > to) throw invalid(`from (${from}) must not be after to (${to}).`);
	return { from, to };
}

/** Successful generations whose UTC day is within from..to, inclusive. */
function generationsIn(
	billing: Billing,
	from: string,
	to: string,
	keyId: string | null,
): Transaction[] {
	return billing.transactions().filter((t) => {
		const day = t.created_at.slice(0, 10);
		return t.type === 'generation' && day >= from && day <= to && (!keyId || t.key_id === keyId);
	});
}

const sum = (txs: Transaction[]) => txs.reduce((total, t) => total + t.cost.micro, 0);

/** GET /v1/usage (§4.12, §2.8). by_modality lists every modality, zeros included. */
export function usageAnswer(billing: Billing, query: URLSearchParams): Answer {
	const { from, to } = dateRange(query);
	const txs = generationsIn(billing, from, to, query.get('key_id'));
	const group = <T extends string>(values: T[], pick: (t: Transaction) => T | undefined) =>
		values.map((value) => {
			const items = txs.filter((t) => pick(t) === value);
			return { value, count: items.length, cost: money(sum(items)) };
		});
	return ok({
		from,
		to,
		total_cost: usd(sum(txs)),
		generation_count: txs.length,
		by_modality: group(MODALITIES, (t) => t.modality).map(({ value, count, cost }) => ({
			modality: value,
			count,
			cost,
		})),
		by_model: group(
			MODELS.map((m) => m.id),
			(t) => t.model,
		)
			.filter((g) => g.count > 0)
			.map(({ value, count, cost }) => ({ model: value, count, cost })),
	});
}

/** GET /v1/usage/daily (§4.14, §2.9): one item per day in the range, days without use included. */
export function dailyAnswer(billing: Billing, query: URLSearchParams): Answer {
	const { from, to } = dateRange(query);
	const start = Date.parse(from + 'T00:00:00Z');
	const count = (Date.parse(to + 'T00:00:00Z') - start) / DAY_MS + 1;
	if (count > MAX_DAILY_RANGE_DAYS)
		throw invalid(
			`The range from..to may span at most ${MAX_DAILY_RANGE_DAYS} days; got ${count}.`,
		);
	const txs = generationsIn(billing, from, to, query.get('key_id'));
	const days = Array.from({ length: count }, (_, i) => {
		const date = new Date(start + i * DAY_MS).toISOString().slice(0, 10);
		const items = txs.filter((t) => t.created_at.startsWith(date));
		return { date, count: items.length, cost: money(sum(items)) };
	});
	return ok({ days });
}

/**
 * `count` past generations spread evenly over `days` UTC days ending with `endDate` (default today,
 * and then never later than now), cycling through the models with their typical price.
 */
export function seedHistory(
	billing: Billing,
	keyId: string,
	opts: { count: number; days: number; modality?: Modality; endDate?: string },
): Transaction[] {
	const { count, days, modality } = opts;
	if (!Number.isInteger(count) || count < 0)
		throw new Error('seedHistory: count must be an integer >= 0');
	if (!Number.isInteger(days) || days < 1)
		throw new Error('seedHistory: days must be an integer >= 1');
	const models = MODELS.filter((m) => !modality || m.modality === modality);
	if (!models.length) throw new Error(`seedHistory: unknown modality ${modality}`);
	const endDate = opts.endDate ?? new Date().toISOString().slice(0, 10);
	if (!isDate(endDate)) throw new Error('seedHistory: endDate must be YYYY-MM-DD');

	const start = Date.parse(endDate + 'T00:00:00Z') - (days - 1) * DAY_MS;
	let stop = start + days * DAY_MS;
	if (Date.now() > start && Date.now() < stop) stop = Date.now();
	return Array.from({ length: count }, (_, i) => {
		const m = models[i % models.length];
		const at = start + Math.floor(((i + 0.5) * (stop - start)) / count);
		return billing.record({
			id: newId(m.modality === 'image' || m.modality === 'voice' ? 'gen_' : 'job_'),
			type: 'generation',
			model: m.id,
			modality: m.modality,
			cost: money(typicalPriceMicro(m)),
			status: 'completed',
			created_at: new Date(at).toISOString(),
			key_id: keyId,
		});
	});
}
