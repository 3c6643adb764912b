import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import type { ServiceClient } from '../shared/transport';
import { serviceError } from '../shared/transport';

/** One item's request(s), read and checked before anything is sent; it returns one output or a list. */
export type PreparedRequest = (client: ServiceClient) => Promise<IDataObject | IDataObject[]>;

/** Reads and checks one item's parameters (throwing a clear error) and returns what to send. */
export type AccountOperation = (ctx: IExecuteFunctions, index: number) => PreparedRequest;

/** A list becomes one item per element; an object is one item. Every item is paired with its input. */
export function toItems(result: IDataObject | IDataObject[], index: number): INodeExecutionData[] {
	const list = Array.isArray(result) ? result : [result];
	return list.map((json) => ({ json, pairedItem: { item: index } }));
}

/** §5: the scope that credits and usage need. */
export const CREDITS_READ = 'credits:read';

/**
 * A 403 from the service means the credential's key lacks a scope (§5). The service's own message
 * comes first; the error then says which scope this operation needs and how to get a key with it.
 */
export function scopeError(ctx: IExecuteFunctions, error: Error, scope: string, index: number): Error {
	const context = (error as { context?: IDataObject }).context ?? {};
	if (context.serviceStatus !== 403) return error;
	const said = error.message.replace(/ \[item \d+\]$/, '');
	const message = said.includes(scope) ? said : `${said.replace(/\.?$/, '.')} This operation needs the ${scope} scope.`;
	return serviceError(
		ctx,
		{ code: (context.serviceCode as string | undefined) ?? 'insufficient_scope', message },
		403,
		index,
		`The API key of the credential lacks the ${scope} scope. Create a key that has it (Generation Service Account node, API Key › Create, scope "Credits: Read"), then put that key in the credential.`,
	);
}

/** Sends a request that needs `scope`, turning a 403 into an error that names the scope. */
export async function withScope<T>(
	ctx: IExecuteFunctions,
	scope: string,
	index: number,
	request: () => Promise<T>,
): Promise<T> {
	return await request().catch((error: Error) => {
		throw scopeError(ctx, error, scope, index);
	});
}

/** The §4.13 and §4.9 answers wrap their list in an object; anything else is an unexpected answer. */
export function listIn(ctx: IExecuteFunctions, response: unknown, field: string, index: number): IDataObject[] {
	const list = (response as IDataObject | undefined)?.[field];
	if (Array.isArray(list)) return list as IDataObject[];
	throw serviceError(
		ctx,
		{ code: 'unexpected_answer', message: `The service's answer has no "${field}" list` },
		undefined,
		index,
		`Answer as sent: ${JSON.stringify(response)?.slice(0, 500)}`,
	);
}

export const showFor = (resource: string, operation?: string[]): INodeProperties['displayOptions'] => ({
	show: operation ? { resource: [resource], operation } : { resource: [resource] },
});
