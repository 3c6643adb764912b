import { initEngine, loadOptionsContext, runNode, shutdownEngine } from './helpers/engine';

import type { IDataObject, INodeParameters } from 'n8n-workflow';
import { request } from 'undici';

import { GenerationServiceAccount } from '../nodes/GenerationServiceAccount/GenerationServiceAccount.node';
import type { Sandbox, Transaction } from './sandbox';
import { startSandbox } from './sandbox';

const node = new GenerationServiceAccount();
let sandbox: Sandbox;
let credentials: { apiKey: string; baseUrl: string };
/** The ID of the sandbox's seeded key, which the seeded history is charged to. */
let seededKeyId: string;

const account = (resource: string, operation: string, extra: INodeParameters = {}): INodeParameters => ({
	resource,
	operation,
	...extra,
});
const run = async (parameters: INodeParameters, extra: { items?: IDataObject[]; continueOnFail?: boolean; apiKey?: string } = {}) =>
	await runNode(node, {
		credentials: extra.apiKey ? { ...credentials, apiKey: extra.apiKey } : credentials,
		parameters,
		items: extra.items,
		continueOnFail: extra.continueOnFail,
	});

/** A call to the service from outside n8n, e.g. to use a key the node created. */
async function call(method: 'GET' | 'POST', path: string, apiKey: string, body?: unknown) {
	const response = await request(`${sandbox.baseUrl}${path}`, {
		method,
		headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	return { status: response.statusCode, body: (await response.body.json()) as IDataObject };
}

/** The ledger's successful generations in a range of UTC days, as §4.12 and §4.14 count them. */
const generationsIn = (from: string, to: string, keyId?: string) =>
	sandbox
		.transactions()
		.filter((t) => t.type === 'generation')
		.filter((t) => t.created_at.slice(0, 10) >= from && t.created_at.slice(0, 10) <= to)
		.filter((t) => !keyId || t.key_id === keyId);
const total = (transactions: Transaction[]) => transactions.reduce((sum, t) => sum + t.cost.micro, 0);
const publicFields = ({ key_id: _key, idempotency_key: _idempotency, ...shown }: Transaction) => shown;

beforeAll(async () => {
	await initEngine('default');
	sandbox = await startSandbox();
	credentials = { apiKey: sandbox.apiKey, baseUrl: sandbox.baseUrl };
	// 250 generations over 2024-03-01..10 (25 a day), plus the seeded top-up, a refund and a top-up.
	const history = sandbox.seedHistory({ count: 250, days: 10, endDate: '2024-03-10' });
	sandbox.refund(history[3].id);
	sandbox.topUp(5_000_000);
	seededKeyId = history[0].key_id!;
});
afterAll(async () => {
	await sandbox.stop();
	await shutdownEngine();
});
beforeEach(() => {
	sandbox.clearFaults();
	sandbox.resetRecording();
});

describe('API keys', () => {
	it('creates a key, lists it by its prefix only, the key works, then is deleted and refused with 401', async () => {
		const created = await run(
			account('apiKey', 'create', {
				name: 'Nightly renders',
				scopes: ['generate', 'credits:read'],
				additionalFields: { capTotalMicro: 250_000 },
			}),
		);
		expect(created.error).toBeUndefined();
		expect(sandbox.requestsTo('POST', '/v1/api-keys')[0].body).toEqual({
			name: 'Nightly renders',
			scopes: ['generate', 'credits:read'],
			cap_total_micro: 250_000,
		});
		const [key] = created.items;
		expect(key.pairedItem).toEqual({ item: 0 });
		expect(key.json).toMatchObject({
			name: 'Nightly renders',
			scopes: ['generate', 'credits:read'],
			cap_total_micro: 250_000,
			key: expect.stringMatching(/^gs_test_[0-9a-f]{40}$/),
		});
		const { id, key: secret } = key.json as { id: string; key: string };

		const listed = await run(account('apiKey', 'getAll'));
		const keys = listed.items.map((item) => item.json);
		expect(keys.length).toBeGreaterThanOrEqual(2);
		expect(listed.items.every((item) => item.pairedItem && (item.pairedItem as { item: number }).item === 0)).toBe(true);
		expect(keys.find((k) => k.id === id)).toMatchObject({ name: 'Nightly renders', prefix: secret.slice(0, 12) });
		expect(JSON.stringify(listed.run)).not.toContain(secret);
		expect(keys.every((k) => !('key' in k))).toBe(true);

		const used = await call('POST', '/v1/generations/image', secret, { model: 'flux-schnell', prompt: 'a test' });
		expect(used.status).toBe(200);
		expect(sandbox.charges().at(-1)).toMatchObject({ id: used.body.id, key_id: id });

		const deleted = await run(account('apiKey', 'delete', { keyId: id }));
		expect(deleted.items.map((item) => item.json)).toEqual([{ deleted: true, id }]);
		expect(sandbox.requestsTo('DELETE', `/v1/api-keys/${id}`).map((r) => r.status)).toEqual([204]);

		const refused = await call('POST', '/v1/generations/image', secret, { model: 'flux-schnell', prompt: 'a test' });
		expect(refused.status).toBe(401);
		const after = await run(account('apiKey', 'getAll'));
		expect(after.items.map((item) => item.json.id)).not.toContain(id);
	});

	it('creates a key without a cap when the field is left out', async () => {
		const created = await run(account('apiKey', 'create', { name: 'Reader', scopes: ['credits:read'] }));
		expect(sandbox.requestsTo('POST', '/v1/api-keys')[0].body).toEqual({ name: 'Reader', scopes: ['credits:read'] });
		expect(created.items[0].json.cap_total_micro).toBeNull();
	});

	it('shows the service\'s 404 for a key that does not exist', async () => {
		const result = await run(account('apiKey', 'delete', { keyId: 'key_missing' }));
		expect(result.error?.httpCode).toBe('404');
		expect(result.error?.message).toMatch(/key_missing.*\[item 0\]/);
		expect(sandbox.requestsTo('DELETE', '/v1/api-keys/')).toHaveLength(1);
	});

	it('offers the keys in the editor by name and prefix, valued by ID', async () => {
		const context = loadOptionsContext(node, { credentials, parameters: account('apiKey', 'delete') }, 'parameters.keyId');
		const options = await node.methods.loadOptions.getApiKeys.call(context);
		expect(options).toContainEqual({
			name: `Sandbox key (${sandbox.apiKey.slice(0, 12)}…)`,
			value: seededKeyId,
			description: 'Scopes: generate, assets:read, assets:delete, credits:read',
		});
		expect(JSON.stringify(options)).not.toContain(sandbox.apiKey);
	});
});

describe('credit', () => {
	it('returns the balance and the caps as sent, with unset caps null', async () => {
		const result = await run(account('credit', 'get'));
		expect(result.error).toBeUndefined();
		const [item] = result.items;
		expect(item.json).toEqual((await call('GET', '/v1/credits', sandbox.apiKey)).body);
		expect(item.json.balance).toEqual({
			micro: sandbox.balanceMicro(),
			display: expect.stringMatching(/^\$\d+\.\d{6}$/),
			currency: 'USD',
		});
		const caps = item.json.caps as IDataObject;
		expect(caps.organization).toMatchObject({ micro: 1_000_000_000, used_micro: expect.any(Number) });
		expect(caps.project).toBeNull();
		expect(caps.key).toBeNull();
	});

	it('shows a project cap and the calling key\'s cap as objects', async () => {
		const capped = sandbox.createKey({ name: 'capped', scopes: ['credits:read'], capTotalMicro: 75_000 });
		sandbox.setCap('project', 20_000_000);
		const result = await run(account('credit', 'get'), { apiKey: capped.key });
		sandbox.setCap('project', null);
		const caps = result.items[0].json.caps as IDataObject;
		expect(caps.key).toEqual({ micro: 75_000, display: '$0.075000', used_micro: 0 });
		expect(caps.project).toMatchObject({ micro: 20_000_000, display: '$20.000000' });
	});

	it('says which scope is missing when the key lacks credits:read', async () => {
		const limited = sandbox.createKey({ name: 'generate only', scopes: ['generate'] });
		const result = await run(account('credit', 'get'), { apiKey: limited.key });
		expect(result.error?.httpCode).toBe('403');
		expect(result.error?.message).toMatch(/credits:read.*\[item 0\]$/);
		expect(result.error?.description).toMatch(/Code: insufficient_scope · HTTP status: 403/);
		expect(result.error?.description).toMatch(/lacks the credits:read scope.*Credits: Read/);
		expect(sandbox.requestsTo('GET', '/v1/credits')).toHaveLength(1);
		expect(JSON.stringify(result.run)).not.toContain(limited.key);
	});

	it('names the scope even when the service\'s 403 does not', async () => {
		sandbox.fault({ path: '/v1/usage', kind: 'status', status: 403 });
		const result = await run(account('usage', 'getSummary', { from: '2024-03-01', to: '2024-03-02' }));
		expect(result.error?.message).toBe('Simulated 403 (sandbox fault). This operation needs the credits:read scope. [item 0]');
		expect(result.error?.description).toMatch(/lacks the credits:read scope/);
		expect(sandbox.requestsTo('GET', '/v1/usage')).toHaveLength(1);
	});
});

describe('usage summary', () => {
	it('equals the ledger for the range, with dates from the date picker and as ISO strings', async () => {
		const result = await run(account('usage', 'getSummary', { from: '2024-03-03T00:00:00', to: '2024-03-07' }));
		expect(result.error).toBeUndefined();
		expect(sandbox.requestsTo('GET', '/v1/usage')[0].query).toEqual({ from: '2024-03-03', to: '2024-03-07' });
		const summary = result.items[0].json;
		const ledger = generationsIn('2024-03-03', '2024-03-07');
		expect(ledger).toHaveLength(125);
		expect(summary).toMatchObject({ from: '2024-03-03', to: '2024-03-07', generation_count: 125 });
		expect((summary.total_cost as IDataObject).micro).toBe(total(ledger));
		for (const row of summary.by_modality as Array<{ modality: string; count: number; cost: { micro: number } }>) {
			const rows = ledger.filter((t) => t.modality === row.modality);
			expect([row.count, row.cost.micro]).toEqual([rows.length, total(rows)]);
		}
		const byModel = summary.by_model as Array<{ model: string; count: number; cost: { micro: number } }>;
		expect(byModel.reduce((sum, row) => sum + row.count, 0)).toBe(125);
		for (const row of byModel) {
			const rows = ledger.filter((t) => t.model === row.model);
			expect([row.count, row.cost.micro]).toEqual([rows.length, total(rows)]);
		}
	});

	it.each([
		['a timestamp with a zone', '2024-03-02T23:30:00-05:00', '2024-03-04T08:00:00Z', '2024-03-02', '2024-03-04'],
		['a Luxon date from an expression', '={{ DateTime.fromISO("2024-03-02") }}', '={{ DateTime.fromISO("2024-03-04T10:00:00") }}', '2024-03-02', '2024-03-04'],
		['a JS Date from an expression', '={{ new Date("2024-03-02T12:00:00Z") }}', '={{ new Date(Date.UTC(2024, 2, 4)) }}', '2024-03-02', '2024-03-04'],
	])('takes the calendar date of %s', async (_label, from, to, sentFrom, sentTo) => {
		const result = await run(account('usage', 'getSummary', { from, to }));
		expect(result.error).toBeUndefined();
		expect(sandbox.requestsTo('GET', '/v1/usage')[0].query).toEqual({ from: sentFrom, to: sentTo });
		expect(result.items[0].json.generation_count).toBe(generationsIn(sentFrom, sentTo).length);
	});

	it('filters by key', async () => {
		const other = sandbox.createKey({ name: 'idle', scopes: ['generate'] });
		const range = { from: '2024-03-01', to: '2024-03-10' };
		const seeded = await run(account('usage', 'getSummary', { ...range, additionalFields: { keyId: seededKeyId } }));
		const idle = await run(account('usage', 'getSummary', { ...range, additionalFields: { keyId: other.id } }));
		expect(sandbox.requestsTo('GET', '/v1/usage').map((r) => r.query.key_id)).toEqual([seededKeyId, other.id]);
		expect(seeded.items[0].json.generation_count).toBe(generationsIn(range.from, range.to, seededKeyId).length);
		expect((seeded.items[0].json.total_cost as IDataObject).micro).toBe(total(generationsIn(range.from, range.to, seededKeyId)));
		expect(idle.items[0].json).toMatchObject({ generation_count: 0, total_cost: { micro: 0 } });
	});
});

describe('daily usage', () => {
	it('gives one item per day, each equal to the ledger', async () => {
		const result = await run(account('usage', 'getDaily', { from: '2024-02-28', to: '2024-03-11T00:00:00' }));
		expect(sandbox.requestsTo('GET', '/v1/usage/daily')[0].query).toEqual({ from: '2024-02-28', to: '2024-03-11' });
		const days = result.items.map((item) => item.json as { date: string; count: number; cost: { micro: number } });
		expect(days.map((day) => day.date)).toEqual([
			'2024-02-28', '2024-02-29', '2024-03-01', '2024-03-02', '2024-03-03', '2024-03-04', '2024-03-05',
			'2024-03-06', '2024-03-07', '2024-03-08', '2024-03-09', '2024-03-10', '2024-03-11',
		]);
		for (const day of days) {
			const ledger = generationsIn(day.date, day.date);
			expect([day.count, day.cost.micro]).toEqual([ledger.length, total(ledger)]);
		}
		expect(days.reduce((sum, day) => sum + day.count, 0)).toBe(250);
		expect(result.items.every((item) => (item.pairedItem as { item: number }).item === 0)).toBe(true);
	});
});

describe('transactions', () => {
	it('Return All follows the cursor in pages of 100 and gives the whole ledger', async () => {
		const result = await run(account('usage', 'getTransactions', { returnAll: true }));
		expect(result.error).toBeUndefined();
		const ledger = sandbox.transactions();
		expect(ledger.length).toBeGreaterThan(250);
		expect(result.items).toHaveLength(ledger.length);
		expect(result.items.map((item) => item.json)).toEqual(ledger.map(publicFields));

		const pages = sandbox.requestsTo('GET', '/v1/usage/transactions');
		expect(pages).toHaveLength(Math.ceil(ledger.length / 100));
		expect(pages.length).toBeGreaterThanOrEqual(3);
		expect(pages.every((page) => page.query.limit === '100')).toBe(true);
		expect(pages[0].query.cursor).toBeUndefined();
		// Each request carries the cursor of the page before it.
		for (let i = 1; i < pages.length; i++) {
			const previous = await call('GET', `/v1/usage/transactions?${new URLSearchParams(pages[i - 1].query)}`, sandbox.apiKey);
			expect(previous.body.has_more).toBe(true);
			expect(pages[i].query.cursor).toBe(previous.body.cursor);
		}
	});

	it('Return All with filters gives exactly the matching part of the ledger', async () => {
		const result = await run(
			account('usage', 'getTransactions', { returnAll: true, filters: { type: 'generation', modality: 'video' } }),
		);
		const ledger = sandbox.transactions().filter((t) => t.type === 'generation' && t.modality === 'video');
		expect(ledger.length).toBeGreaterThan(0);
		expect(result.items.map((item) => item.json.id)).toEqual(ledger.map((t) => t.id));
		const pages = sandbox.requestsTo('GET', '/v1/usage/transactions');
		expect(pages.every((page) => page.query.type === 'generation' && page.query.modality === 'video')).toBe(true);
	});

	it('without Return All asks for one page of Limit', async () => {
		const result = await run(account('usage', 'getTransactions', { returnAll: false, limit: 7, filters: { type: 'top_up' } }));
		const ledger = sandbox.transactions().filter((t) => t.type === 'top_up');
		expect(result.items.map((item) => item.json.id)).toEqual(ledger.slice(0, 7).map((t) => t.id));
		expect(result.items[0].json.cost).toEqual({ micro: -5_000_000, display: '-$5.000000' });
		expect(sandbox.requestsTo('GET', '/v1/usage/transactions').map((r) => r.query)).toEqual([{ type: 'top_up', limit: '7' }]);
	});

	it('uses a Limit of 50 by default and pairs every transaction with its input item', async () => {
		const result = await run(account('usage', 'getTransactions', {}), { items: [{}, {}] });
		expect(sandbox.requestsTo('GET', '/v1/usage/transactions').map((r) => r.query.limit)).toEqual(['50', '50']);
		expect(result.items).toHaveLength(100);
		expect(result.items.map((item) => (item.pairedItem as { item: number }).item)).toEqual([
			...Array<number>(50).fill(0),
			...Array<number>(50).fill(1),
		]);
	});
});

describe('checks before any request', () => {
	it.each([
		['From after To', account('usage', 'getSummary', { from: '2024-03-08', to: '2024-03-01' }), /"From" \(2024-03-08\) is after "To" \(2024-03-01\) \[item 0\]/, /earlier/],
		['From after To (daily)', account('usage', 'getDaily', { from: '2024-03-08T00:00:00', to: '2024-03-07T23:59:59' }), /is after "To" \(2024-03-07\)/, /earlier/],
		['a From that is not a date', account('usage', 'getDaily', { from: 'last week', to: '2024-03-01' }), /"From" \(from\): "last week" is not a date \[item 0\]/, /2024-05-31/],
		['a day that does not exist', account('usage', 'getSummary', { from: '2024-02-01', to: '2024-02-30' }), /"To" \(to\): "2024-02-30" is not a date/, /ISO 8601/],
		// n8n refuses an empty required field before the run; an expression can still give one.
		['an empty date', account('usage', 'getSummary', { from: '={{ "" }}', to: '2024-02-03' }), /"From" \(from\) is empty \[item 0\]/, /Pick a date/],
		['Limit 0', account('usage', 'getTransactions', { limit: 0 }), /Invalid value for "Limit" \(limit\): 0 \[item 0\]/, /1 to 100/],
		['Limit 101', account('usage', 'getTransactions', { limit: 101 }), /"Limit" \(limit\): 101/, /1 to 100.*Return All/],
		['Limit 2.5', account('usage', 'getTransactions', { limit: 2.5 }), /"Limit" \(limit\): 2\.5/, /whole number/],
		['an unknown type', account('usage', 'getTransactions', { filters: { type: '={{ "gift" }}' } }), /"Type" \(filters\.type\): "gift"/, /generation, top_up, refund/],
		['an empty key name', account('apiKey', 'create', { name: '  ', scopes: ['generate'] }), /name of the key is empty \[item 0\]/, /name/],
		['no scopes', account('apiKey', 'create', { name: 'x', scopes: '={{ [] }}' }), /No scope is selected for the key \[item 0\]/, /generate, assets:read, assets:delete, credits:read/],
		['an unknown scope', account('apiKey', 'create', { name: 'x', scopes: '={{ ["generate", "admin"] }}' }), /"Scopes" \(scopes\): "admin"/, /credits:read/],
		['a negative cap', account('apiKey', 'create', { name: 'x', scopes: ['generate'], additionalFields: { capTotalMicro: -5 } }), /Spending Cap/, /0 or more/],
		['an empty key ID', account('apiKey', 'delete', { keyId: '={{ $json.missing }}' }), /"API Key" \(keyId\): "" \[item 0\]/, /Get Many/],
		['a key ID with a slash', account('apiKey', 'delete', { keyId: 'key_1/../x' }), /"API Key" \(keyId\)/, /Get Many/],
	])('%s', async (_label, parameters, message, description) => {
		const result = await run(parameters);
		expect(result.error?.message).toMatch(message);
		expect(result.error?.description).toMatch(description);
		expect(sandbox.requests).toHaveLength(0);
	});

	it('checks every item first, so a bad date in the last item sends nothing for the others', async () => {
		const result = await run(account('usage', 'getSummary', { from: '={{ $json.from }}', to: '2024-03-10' }), {
			items: [{ from: '2024-03-01' }, { from: '2024-03-02' }, { from: 'tomorrow' }],
		});
		expect(result.error?.message).toMatch(/"tomorrow" is not a date \[item 2\]/);
		expect(sandbox.requests).toHaveLength(0);
	});
});

describe('Continue On Fail', () => {
	it('puts each item\'s error on its own output, paired, and runs the others', async () => {
		const result = await run(account('usage', 'getSummary', { from: '={{ $json.from }}', to: '2024-03-10' }), {
			continueOnFail: true,
			items: [{ from: '2024-03-01' }, { from: 'soon' }, { from: '2024-03-09' }],
		});
		expect(result.error).toBeUndefined();
		expect(result.items.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 1 }, { item: 2 }]);
		expect(result.items[1].json).toEqual({
			error: expect.stringMatching(/"From" \(from\): "soon" is not a date \[item 1\]/),
			code: 'invalid_parameter',
			status: null,
		});
		expect(result.items[0].json.generation_count).toBe(generationsIn('2024-03-01', '2024-03-10').length);
		expect(result.items[2].json.generation_count).toBe(generationsIn('2024-03-09', '2024-03-10').length);
		expect(sandbox.requestsTo('GET', '/v1/usage')).toHaveLength(2);
	});

	it('gives the service\'s code and status, such as a missing scope', async () => {
		const limited = sandbox.createKey({ name: 'no credits', scopes: ['generate'] });
		const result = await run(account('usage', 'getTransactions', { returnAll: true }), {
			continueOnFail: true,
			apiKey: limited.key,
		});
		expect(result.items.map((item) => item.json)).toEqual([
			{ error: expect.stringMatching(/credits:read.*\[item 0\]/), code: 'insufficient_scope', status: 403 },
		]);
		expect(result.items[0].pairedItem).toEqual({ item: 0 });
	});

	it('pairs a list output with its item next to another item\'s error', async () => {
		const result = await run(account('usage', 'getDaily', { from: '={{ $json.from }}', to: '2024-03-02' }), {
			continueOnFail: true,
			items: [{ from: '2024-03-01' }, { from: '2024-03-05' }],
		});
		expect(result.items.map((item) => [item.pairedItem, item.json.date ?? item.json.code])).toEqual([
			[{ item: 0 }, '2024-03-01'],
			[{ item: 0 }, '2024-03-02'],
			[{ item: 1 }, 'invalid_parameter'],
		]);
	});
});
