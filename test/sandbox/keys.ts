/** API keys (§2.5, §4.9–§4.11) and the scopes of §5. */
import { randomBytes } from 'node:crypto';
import { type Answer, invalid, isObject, newId, notFound, nowIso, ok, quote } from './common';

export const SCOPES = ['generate', 'assets:read', 'assets:delete', 'credits:read'];

export interface KeyRecord {
	id: string;
	name: string;
	key: string;
	scopes: string[];
	capTotalMicro: number | null;
	/** Spend charged to this key, for its cap. */
	usedMicro: number;
	createdAt: string;
	lastUsedAt: string | null;
	revoked: boolean;
}

export class Keys {
	/** "Live keys begin with a fixed environment prefix" (§5): new keys take the seeded key's. */
	readonly envPrefix: string;
	readonly seeded: KeyRecord;
	private readonly records: KeyRecord[] = [];

	constructor(seedKey?: string) {
		this.envPrefix = /^[a-z]+_[a-z]+_/i.exec(seedKey ?? '')?.[0] ?? 'gs_test_';
		this.seeded = this.add('Sandbox key', SCOPES, null, seedKey);
	}

	private add(
		name: string,
		scopes: string[],
		capTotalMicro: number | null,
		key?: string,
	): KeyRecord {
		const record: KeyRecord = {
			id: newId('key_'),
			name,
			key: key ?? this.envPrefix + randomBytes(20).toString('hex'),
			scopes: [...scopes],
			capTotalMicro,
			usedMicro: 0,
			createdAt: nowIso(),
			lastUsedAt: null,
			revoked: false,
		};
		this.records.push(record);
		return record;
	}

	/** POST /v1/api-keys body (§4.10), validated; also used by Sandbox.createKey. */
	create(body: unknown): KeyRecord {
		if (!isObject(body)) throw invalid('The body must be a JSON object with name and scopes.');
		const { name, scopes, cap_total_micro: cap } = body;
		if (typeof name !== 'string' || name.trim() === '')
			throw invalid('name is required (a non-empty string).');
		if (!Array.isArray(scopes) || scopes.length === 0) {
			throw invalid(`scopes is required: a non-empty array of ${SCOPES.join(', ')}.`);
		}
		const unknown = scopes.find((s) => typeof s !== 'string' || !SCOPES.includes(s));
		if (unknown !== undefined)
			throw invalid(`scopes contains ${quote(unknown)}; allowed: ${SCOPES.join(', ')}.`);
		if (cap !== undefined && cap !== null && !(Number.isSafeInteger(cap) && (cap as number) >= 0)) {
			throw invalid(
				`cap_total_micro must be a non-negative integer (microdollars) or omitted, got ${quote(cap)}.`,
			);
		}
		return this.add(
			name,
			[...new Set(scopes as string[])],
			(cap as number | null | undefined) ?? null,
		);
	}

	/** The live record for a key value; revoked keys are unknown. */
	authenticate(value: string): KeyRecord | undefined {
		return this.records.find((r) => r.key === value && !r.revoked);
	}

	byId(id: string): KeyRecord | undefined {
		return this.records.find((r) => r.id === id);
	}

	listAnswer(): Answer {
		return ok({
			keys: this.records
				.filter((r) => !r.revoked)
				.map((r) => ({
					id: r.id,
					name: r.name,
					prefix: r.key.slice(0, 12),
					scopes: r.scopes,
					cap_total_micro: r.capTotalMicro,
					created_at: r.createdAt,
					last_used_at: r.lastUsedAt,
				})),
		});
	}

	/** The full key is in this answer only (§2.5). */
	createAnswer(body: unknown): Answer {
		const r = this.create(body);
		return ok({
			id: r.id,
			name: r.name,
			key: r.key,
			scopes: r.scopes,
			cap_total_micro: r.capTotalMicro,
			created_at: r.createdAt,
		});
	}

	/** Revoked at once and for good (§4.11): later use of the key gets 401. */
	deleteAnswer(id: string): Answer {
		const r = this.byId(id);
		if (!r || r.revoked) throw notFound(`No API key with id ${quote(id)}.`);
		r.revoked = true;
		return { status: 204 };
	}
}
