/** Usage: summary (§2.8, §4.12), transactions (§2.7, §4.13), daily usage (§2.9, §4.14). */
import type { IDataObject, IExecuteFunctions, INodeProperties } from 'n8n-workflow';

import { invalidParameter } from '../shared/generation';
import { serviceError } from '../shared/transport';
import { keyIdParameter } from './apiKey';
import type { AccountOperation } from './common';
import { CREDITS_READ, listIn, showFor, withScope } from './common';
import { MODALITY_OPTIONS } from '../shared/fields';

/** §4.13 / §8: a page holds 1 to 100 transactions; Return All asks for the largest page. */
const MAX_PAGE_SIZE = 100;
const TYPES = ['generation', 'top_up', 'refund'];
// §4.13 lists image, video, voice and music; 3D transactions carry threeD (§4.5 leaves it open).
const MODALITIES = ['image', 'video', 'voice', 'music', 'threeD'];

const dateRange = (operation: string, verb: string): INodeProperties[] => [
	{
		displayName: 'From',
		name: 'from',
		type: 'dateTime',
		required: true,
		default: '',
		description: `First day ${verb}, included. Only the date counts (UTC days); an expression may give a date such as 2024-05-01.`,
		displayOptions: showFor('usage', [operation]),
	},
	{
		displayName: 'To',
		name: 'to',
		type: 'dateTime',
		required: true,
		default: '',
		description: `Last day ${verb}, included. Only the date counts (UTC days); an expression may give a date such as 2024-05-31.`,
		displayOptions: showFor('usage', [operation]),
	},
];

export const usageProperties: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: showFor('usage'),
		options: [
			{
				name: 'Get Daily',
				value: 'getDaily',
				action: 'Get daily usage',
				description: 'Get the number and cost of generations for each day of a range',
			},
			{
				name: 'Get Summary',
				value: 'getSummary',
				action: 'Get a usage summary',
				description: 'Get the total cost and count of generations in a range, by modality and by model',
			},
			{
				name: 'Get Transactions',
				value: 'getTransactions',
				action: 'Get transactions',
				description: 'Get generations, top-ups and refunds, newest first',
			},
		],
		default: 'getSummary',
	},
	...dateRange('getSummary', 'to count'),
	{
		displayName: 'Additional Fields',
		name: 'additionalFields',
		type: 'collection',
		placeholder: 'Add Field',
		default: {},
		displayOptions: showFor('usage', ['getSummary']),
		options: [
			{
				displayName: 'API Key Name or ID',
				name: 'keyId',
				type: 'options',
				typeOptions: { loadOptionsMethod: 'getApiKeys' },
				default: '',
				description:
					'Count only what this key spent. Choose from the list, or specify an ID using an <a href="https://docs.n8n.io/code/expressions/">expression</a>.',
			},
		],
	},
	{
		displayName: 'Return All',
		name: 'returnAll',
		type: 'boolean',
		default: false,
		description: 'Whether to return all results or only up to a given limit',
		displayOptions: showFor('usage', ['getTransactions']),
	},
	{
		displayName: 'Limit',
		name: 'limit',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: MAX_PAGE_SIZE },
		default: 50,
		description: 'Max number of results to return',
		displayOptions: { show: { resource: ['usage'], operation: ['getTransactions'], returnAll: [false] } },
	},
	{
		displayName: 'Filters',
		name: 'filters',
		type: 'collection',
		placeholder: 'Add Filter',
		default: {},
		displayOptions: showFor('usage', ['getTransactions']),
		options: [
			{
				displayName: 'Modality',
				name: 'modality',
				type: 'options',
				default: 'image',
				description: 'Only transactions of this modality',
				options: MODALITY_OPTIONS,
			},
			{
				displayName: 'Type',
				name: 'type',
				type: 'options',
				default: 'generation',
				description: 'Only transactions of this type',
				options: [
					{ name: 'Generation', value: 'generation' },
					{ name: 'Refund', value: 'refund' },
					{ name: 'Top-Up', value: 'top_up' },
				],
			},
		],
	},
	...dateRange('getDaily', 'to list'),
];

const isCalendarDate = (text: string) =>
	/^\d{4}-\d{2}-\d{2}$/.test(text) && new Date(`${text}T00:00:00Z`).toISOString().startsWith(text);

/**
 * The calendar date of a date parameter, as YYYY-MM-DD: the date picker's value and ISO 8601
 * strings keep the date as written; a JS Date counts in UTC; a Luxon DateTime (an expression such
 * as {{ $today }}) in its own zone.
 */
export function toDate(value: unknown): string | undefined {
	let text: string | undefined;
	if (typeof value === 'string') text = /^\s*(\d{4}-\d{2}-\d{2})(?:$|[T\s])/.exec(value)?.[1];
	else if (value instanceof Date) text = Number.isNaN(value.getTime()) ? undefined : value.toISOString().slice(0, 10);
	else if (value && typeof (value as { toISODate?: unknown }).toISODate === 'function') {
		const iso = (value as { toISODate: () => unknown }).toISODate();
		text = typeof iso === 'string' ? iso : undefined;
	}
	return text !== undefined && isCalendarDate(text) ? text : undefined;
}

function dateParameter(ctx: IExecuteFunctions, name: 'from' | 'to', index: number): string {
	const value = ctx.getNodeParameter(name, index, '') as unknown;
	const label = name === 'from' ? 'From' : 'To';
	if (value === '' || value === undefined || value === null) {
		throw invalidParameter(ctx, index, `"${label}" (${name}) is empty`, 'Pick a date, or give one such as 2024-05-31.');
	}
	const date = toDate(value);
	if (date === undefined) {
		throw invalidParameter(
			ctx,
			index,
			`Invalid value for "${label}" (${name}): ${JSON.stringify(value)} is not a date`,
			'Allowed: a date from the date picker, an ISO 8601 date such as 2024-05-31 (a time after it is ignored), or a date from an expression such as {{ $today }}.',
		);
	}
	return date;
}

/** `from` and `to`, both included (§4.12, §4.14), checked before any request. */
function rangeParameters(ctx: IExecuteFunctions, index: number): IDataObject {
	const from = dateParameter(ctx, 'from', index);
	const to = dateParameter(ctx, 'to', index);
	if (from > to) {
		throw invalidParameter(
			ctx,
			index,
			`"From" (${from}) is after "To" (${to})`,
			'The range includes both days, so From must be the same day as To or earlier.',
		);
	}
	return { from, to };
}

function oneOfParameter(ctx: IExecuteFunctions, value: unknown, allowed: string[], field: string, label: string, index: number) {
	if (value === undefined || value === '') return undefined;
	if (typeof value === 'string' && allowed.includes(value)) return value;
	throw invalidParameter(ctx, index, `Invalid value for "${label}" (${field}): ${JSON.stringify(value)}`, `Allowed: ${allowed.join(', ')}.`);
}

function limitParameter(ctx: IExecuteFunctions, index: number): number {
	const value = ctx.getNodeParameter('limit', index, 50) as unknown;
	const limit = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
	if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
		throw invalidParameter(
			ctx,
			index,
			`Invalid value for "Limit" (limit): ${JSON.stringify(value)}`,
			`Allowed: a whole number from 1 to ${MAX_PAGE_SIZE}. To get more, turn on Return All.`,
		);
	}
	return limit;
}

/** GET /v1/usage (§4.12): the summary as returned. */
const getSummary: AccountOperation = (ctx, index) => {
	const qs = rangeParameters(ctx, index);
	const additionalFields = ctx.getNodeParameter('additionalFields', index, {}) as IDataObject;
	if (additionalFields.keyId !== undefined && additionalFields.keyId !== '') {
		qs.key_id = keyIdParameter(ctx, additionalFields.keyId, index, 'additionalFields.keyId');
	}
	return async (client) =>
		await withScope(ctx, CREDITS_READ, index, async () =>
			client.request<IDataObject>({ method: 'GET', path: '/v1/usage', qs }, index),
		);
};

/** GET /v1/usage/daily (§4.14): one item per day. */
const getDaily: AccountOperation = (ctx, index) => {
	const qs = rangeParameters(ctx, index);
	return async (client) =>
		listIn(
			ctx,
			await withScope(ctx, CREDITS_READ, index, async () =>
				client.request({ method: 'GET', path: '/v1/usage/daily', qs }, index),
			),
			'days',
			index,
		);
};

/**
 * GET /v1/usage/transactions (§4.13): one item per transaction. Return All follows `cursor` in pages
 * of 100 until `has_more` is false; otherwise one page of `limit`.
 */
const getTransactions: AccountOperation = (ctx, index) => {
	const filters = ctx.getNodeParameter('filters', index, {}) as IDataObject;
	const qs: IDataObject = {};
	const type = oneOfParameter(ctx, filters.type, TYPES, 'filters.type', 'Type', index);
	const modality = oneOfParameter(ctx, filters.modality, MODALITIES, 'filters.modality', 'Modality', index);
	if (type) qs.type = type;
	if (modality) qs.modality = modality;
	const returnAll = ctx.getNodeParameter('returnAll', index, false) as boolean;
	const limit = returnAll ? MAX_PAGE_SIZE : limitParameter(ctx, index);

	return async (client) =>
		await withScope(ctx, CREDITS_READ, index, async () => {
			const transactions: IDataObject[] = [];
			const cursors = new Set<string>();
			let cursor: string | undefined;
			for (;;) {
				const page = await client.request<IDataObject>(
					{ method: 'GET', path: '/v1/usage/transactions', qs: { ...qs, limit, ...(cursor ? { cursor } : {}) } },
					index,
				);
				transactions.push(...listIn(ctx, page, 'transactions', index));
				if (!returnAll || page.has_more !== true) return transactions;
				cursor = typeof page.cursor === 'string' ? page.cursor : '';
				// A missing or repeated cursor would loop for ever: stop with what the service said.
				if (!cursor || cursors.has(cursor)) {
					throw serviceError(
						ctx,
						{
							code: 'unexpected_answer',
							message: `The service said more transactions follow but gave ${cursor ? 'a cursor it had given before' : 'no cursor'}`,
						},
						undefined,
						index,
						`Stopped after ${transactions.length} transactions. Turn off Return All and use Limit, or try again later.`,
					);
				}
				cursors.add(cursor);
			}
		});
};

export const usageOperations: Record<string, AccountOperation> = { getSummary, getTransactions, getDaily };
