import type {
	IExecuteFunctions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
} from 'n8n-workflow';
import { NodeConnectionTypes, NodeOperationError } from 'n8n-workflow';

import { runItems } from '../shared/generation';
import { apiKeyOperations, apiKeyProperties, getApiKeys } from './apiKey';
import type { AccountOperation, PreparedRequest } from './common';
import { toItems } from './common';
import { creditOperations, creditProperties } from './credit';
import { usageOperations, usageProperties } from './usage';

const OPERATIONS: Record<string, Record<string, AccountOperation>> = {
	apiKey: apiKeyOperations,
	credit: creditOperations,
	usage: usageOperations,
};

export class GenerationServiceAccount implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Generation Service Account',
		name: 'generationServiceAccount',
		icon: { light: 'file:../../icons/account.svg', dark: 'file:../../icons/account.dark.svg' },
		group: ['transform'],
		version: 1,
		subtitle: '={{ $parameter["operation"] + ": " + $parameter["resource"] }}',
		description: 'Manage API keys and read credits and usage of the Generation Service',
		defaults: { name: 'Generation Service Account' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		usableAsTool: true,
		credentials: [{ name: 'generationServiceApi', required: true }],
		properties: [
			{
				displayName: 'Resource',
				name: 'resource',
				type: 'options',
				noDataExpression: true,
				options: [
					{ name: 'API Key', value: 'apiKey' },
					{ name: 'Credit', value: 'credit' },
					{ name: 'Usage', value: 'usage' },
				],
				default: 'credit',
			},
			{
				displayName:
					'Needs an API key with the Credits: Read scope (credits:read) in the credential',
				name: 'creditsReadNotice',
				type: 'notice',
				default: '',
				displayOptions: { show: { resource: ['credit', 'usage'] } },
			},
			...apiKeyProperties,
			...creditProperties,
			...usageProperties,
		],
	};

	methods = { loadOptions: { getApiKeys } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const resource = this.getNodeParameter('resource', 0) as string;
		const operation = this.getNodeParameter('operation', 0) as string;
		const prepare = OPERATIONS[resource]?.[operation];
		if (!prepare) {
			throw new NodeOperationError(this.getNode(), `The operation "${operation}" of "${resource}" is not supported`);
		}
		const continueOnFail = this.continueOnFail();
		// Every item is read and checked before the first request, so a bad date in item 3 sends nothing.
		const requests = this.getInputData().map((_, index): PreparedRequest | Error => {
			try {
				return prepare(this, index);
			} catch (error) {
				return error as Error;
			}
		});
		const invalid = requests.find((request): request is Error => request instanceof Error);
		if (invalid && !continueOnFail) throw invalid;

		// One item at a time, in input order: key changes and page walks stay easy to follow.
		return [
			await runItems(this, requests.length, 1, continueOnFail, async (run) => {
				const request = requests[run.index];
				if (request instanceof Error) throw request;
				const result = await run.limiter.run(async () => {
					run.checkNotStopped();
					return await request(run.client);
				});
				return toItems(result, run.index);
			}),
		];
	}
}
