/** API keys: §2.5, §4.9 (list), §4.10 (create), §4.11 (delete), and the scopes of §5. */
import type {
	IDataObject,
	IExecuteFunctions,
	ILoadOptionsFunctions,
	INodeProperties,
	INodePropertyOptions,
} from 'n8n-workflow';

import { invalidParameter } from '../shared/generation';
import { ServiceClient } from '../shared/transport';
import type { AccountOperation } from './common';
import { listIn, showFor } from './common';

const SCOPES = ['generate', 'assets:read', 'assets:delete', 'credits:read'];

export const apiKeyProperties: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: showFor('apiKey'),
		options: [
			{
				name: 'Create',
				value: 'create',
				action: 'Create an API key',
				description: 'Create a key; its full value is shown only once, in this node\'s output',
			},
			{
				name: 'Delete',
				value: 'delete',
				action: 'Delete an API key',
				description: 'Revoke a key at once and for good',
			},
			{
				name: 'Get Many',
				value: 'getAll',
				action: 'Get many API keys',
				description: 'List the keys of the account, each with its prefix but never its full value',
			},
		],
		default: 'getAll',
	},
	{
		displayName:
			'The full key is in this node\'s output only once: the service never shows it again. Store it right away (for example in an n8n credential). A lost key cannot be retrieved: delete it and create a new one.',
		name: 'keyShownOnceNotice',
		type: 'notice',
		default: '',
		displayOptions: showFor('apiKey', ['create']),
	},
	{
		displayName: 'Name',
		name: 'name',
		type: 'string',
		required: true,
		default: '',
		placeholder: 'e.g. Production workflows',
		description: 'A name that tells you what the key is for',
		displayOptions: showFor('apiKey', ['create']),
	},
	{
		displayName: 'Scopes',
		name: 'scopes',
		type: 'multiOptions',
		required: true,
		default: ['generate'],
		description: 'What the key may do',
		displayOptions: showFor('apiKey', ['create']),
		options: [
			{ name: 'Assets: Delete', value: 'assets:delete', description: 'Delete stored assets' },
			{ name: 'Assets: Read', value: 'assets:read', description: 'Read stored assets' },
			{
				name: 'Credits: Read',
				value: 'credits:read',
				description: 'Read the credit balance, caps and usage',
			},
			{ name: 'Generate', value: 'generate', description: 'Make images, video, speech, music and 3D models' },
		],
	},
	{
		displayName: 'Additional Fields',
		name: 'additionalFields',
		type: 'collection',
		placeholder: 'Add Field',
		default: {},
		displayOptions: showFor('apiKey', ['create']),
		options: [
			{
				displayName: 'Spending Cap (Microdollars)',
				name: 'capTotalMicro',
				type: 'number',
				typeOptions: { minValue: 0, numberPrecision: 0 },
				default: 10_000_000,
				description: 'The most this key may ever spend. Leave the field out for no cap.',
				hint: '1,000,000 microdollars = 1 USD, so 10,000,000 is 10 USD. 0 lets the key spend nothing.',
			},
		],
	},
	{
		displayName: 'API Key Name or ID',
		name: 'keyId',
		type: 'options',
		typeOptions: { loadOptionsMethod: 'getApiKeys' },
		required: true,
		default: '',
		description:
			'The key to delete. Choose from the list, or specify an ID using an <a href="https://docs.n8n.io/code/expressions/">expression</a>.',
		displayOptions: showFor('apiKey', ['delete']),
	},
];

/** A key ID goes into the URL path, so it must be one plain segment. */
export function keyIdParameter(ctx: IExecuteFunctions, value: unknown, index: number, field: string): string {
	const id = String(value ?? '').trim();
	if (!id || /[\s/?#]/.test(id)) {
		throw invalidParameter(
			ctx,
			index,
			`Invalid value for "API Key" (${field}): ${JSON.stringify(value ?? '')}`,
			'Allowed: the ID of an API key, as Get Many lists it.',
		);
	}
	return id;
}

function capParameter(ctx: IExecuteFunctions, value: unknown, index: number): number | undefined {
	if (value === undefined || value === null || value === '') return undefined;
	const cap = Number(value);
	if (!Number.isSafeInteger(cap) || cap < 0) {
		throw invalidParameter(
			ctx,
			index,
			`Invalid value for "Spending Cap (Microdollars)" (additionalFields.capTotalMicro): ${JSON.stringify(value)}`,
			'Allowed: a whole number of microdollars, 0 or more. Leave the field out for no cap.',
		);
	}
	return cap;
}

/** POST /v1/api-keys (§4.10). The answer, with the full `key`, is the output. */
const create: AccountOperation = (ctx, index) => {
	const name = ctx.getNodeParameter('name', index, '');
	if (typeof name !== 'string' || name.trim() === '') {
		throw invalidParameter(ctx, index, 'The name of the key is empty', 'Give the key a name that tells what it is for.');
	}
	const raw = ctx.getNodeParameter('scopes', index, []) as unknown;
	const scopes = (Array.isArray(raw) ? raw : typeof raw === 'string' && raw ? raw.split(',') : []).map((scope) =>
		String(scope).trim(),
	);
	if (scopes.length === 0) {
		throw invalidParameter(ctx, index, 'No scope is selected for the key', `Choose at least one of ${SCOPES.join(', ')}.`);
	}
	const unknown = scopes.find((scope) => !SCOPES.includes(scope));
	if (unknown !== undefined) {
		throw invalidParameter(
			ctx,
			index,
			`Invalid value for "Scopes" (scopes): ${JSON.stringify(unknown)}`,
			`Allowed: ${SCOPES.join(', ')}.`,
		);
	}
	const additionalFields = ctx.getNodeParameter('additionalFields', index, {}) as IDataObject;
	const cap = capParameter(ctx, additionalFields.capTotalMicro, index);
	const body: IDataObject = { name: name.trim(), scopes: [...new Set(scopes)] };
	if (cap !== undefined) body.cap_total_micro = cap;
	return async (client) => await client.request<IDataObject>({ method: 'POST', path: '/v1/api-keys', body }, index);
};

/** GET /v1/api-keys (§4.9): one item per key. */
const getAll: AccountOperation = (ctx, index) => async (client) =>
	listIn(ctx, await client.request({ method: 'GET', path: '/v1/api-keys' }, index), 'keys', index);

/** DELETE /v1/api-keys/:id (§4.11): the 204 becomes `{ deleted: true, id }`. */
const remove: AccountOperation = (ctx, index) => {
	const id = keyIdParameter(ctx, ctx.getNodeParameter('keyId', index, ''), index, 'keyId');
	return async (client) => {
		await client.request({ method: 'DELETE', path: `/v1/api-keys/${encodeURIComponent(id)}` }, index);
		return { deleted: true, id };
	};
};

export const apiKeyOperations: Record<string, AccountOperation> = { create, getAll, delete: remove };

/** The editor's list of keys, for API Key fields: name and prefix, valued by ID. */
export async function getApiKeys(this: ILoadOptionsFunctions): Promise<INodePropertyOptions[]> {
	const response = await new ServiceClient(this).request<IDataObject>({ method: 'GET', path: '/v1/api-keys' });
	const keys = Array.isArray(response?.keys) ? (response.keys as IDataObject[]) : [];
	return keys
		.filter((key) => typeof key.id === 'string')
		.map((key) => ({
			name: `${String(key.name ?? key.id)} (${String(key.prefix ?? '')}…)`,
			value: String(key.id),
			description: Array.isArray(key.scopes) ? `Scopes: ${key.scopes.join(', ')}` : undefined,
		}));
}
