/** Credit balance and spending caps: §2.4, §4.8. */
import type { IDataObject, INodeProperties } from 'n8n-workflow';

import type { AccountOperation } from './common';
import { CREDITS_READ, showFor, withScope } from './common';

export const creditProperties: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: showFor('credit'),
		options: [
			{
				name: 'Get',
				value: 'get',
				action: 'Get the credit balance',
				description: 'Get the balance and the organization, project and key spending caps',
			},
		],
		default: 'get',
	},
];

/** GET /v1/credits (§4.8): the body as returned; a cap that is not set stays null. */
const get: AccountOperation = (ctx, index) => async (client) =>
	await withScope(ctx, CREDITS_READ, index, async () =>
		client.request<IDataObject>({ method: 'GET', path: '/v1/credits' }, index),
	);

export const creditOperations: Record<string, AccountOperation> = { get };
