import type { INodeProperties, INodePropertyOptions, INodeTypeDescription } from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import type { ModalityDefinition } from './fields';
import { modelParametersField } from './fields';

export const DEFAULT_CONCURRENCY = 5;
export const DEFAULT_WAIT_TIMEOUT_S = 600;
export const DEFAULT_REQUEST_TIMEOUT_S = 120;

const show = (...operation: string[]) => ({ show: { operation } });

/** The parameters of a modality node, in the order the editor shows them. */
function generationProperties(definition: ModalityDefinition): INodeProperties[] {
	const { noun, jobs } = definition;
	const operations: INodePropertyOptions[] = [
		{
			name: 'Generate',
			value: 'generate',
			action: `Generate ${article(noun)} ${noun}`,
			description: `Create ${article(noun)} ${noun} and charge its price to your balance`,
		},
		{
			name: 'Estimate Cost',
			value: 'estimate',
			action: `Estimate the cost of ${article(noun)} ${noun}`,
			description: 'Ask what a generation would cost. Nothing is generated and nothing is charged.',
		},
	];
	if (jobs) {
		operations.push({
			name: 'Get Job',
			value: 'getJob',
			action: `Get ${article(noun)} ${noun} job`,
			description: 'Fetch a job by its ID and, once it is completed, download its output',
		});
	}
	operations.push(...(definition.extraOperations ?? []).map((extra) => extra.option));

	const properties: INodeProperties[] = [
		{
			displayName: 'Operation',
			name: 'operation',
			type: 'options',
			noDataExpression: true,
			options: operations,
			default: 'generate',
		},
		...(definition.notice
			? [
					{
						displayName: definition.notice,
						name: 'notice',
						type: 'notice',
						default: '',
						displayOptions: show('generate', 'estimate', ...(jobs ? ['getJob'] : [])),
					} satisfies INodeProperties,
				]
			: []),
		{
			displayName: 'Model',
			name: 'model',
			type: 'resourceLocator',
			default: { mode: 'list', value: '' },
			required: true,
			description: `The model that makes the ${noun}. Prices differ by model.`,
			displayOptions: show('generate', 'estimate'),
			modes: [
				{
					displayName: 'From List',
					name: 'list',
					type: 'list',
					typeOptions: { searchListMethod: 'searchModels', searchable: true },
				},
				{
					displayName: 'By ID',
					name: 'id',
					type: 'string',
					placeholder: `e.g. ${definition.modelExample ?? 'flux-schnell'}`,
				},
			],
		},
		{
			...definition.prompt,
			name: 'prompt',
			type: 'string',
			typeOptions: { rows: 4 },
			default: '',
			required: true,
			displayOptions: show('generate', 'estimate'),
		},
	];
	if (jobs) {
		properties.push(
			{
				displayName: 'Job ID',
				name: 'jobId',
				type: 'string',
				default: '',
				required: true,
				placeholder: 'e.g. job_8f2c1a',
				description: 'The ID returned by Generate when the job was submitted (it starts with job_)',
				displayOptions: show('getJob'),
			},
			{
				displayName: 'Wait for Completion',
				name: 'waitForCompletion',
				type: 'boolean',
				default: true,
				description:
					'Whether to wait until the job is completed or failed. Turn off to get the job ID at once and receive the result later with Get Job or a Generation Service Trigger.',
				displayOptions: show('generate'),
			},
		);
	}
	properties.push(
		{
			displayName: 'Download Output',
			name: 'download',
			type: 'boolean',
			default: true,
			description: `Whether to download the ${noun} file into the item's binary data`,
			displayOptions: jobs
				? { show: { operation: ['generate', 'getJob'] } }
				: show('generate'),
		},
		{
			displayName: 'Additional Fields',
			name: 'additionalFields',
			type: 'collection',
			placeholder: 'Add Field',
			default: {},
			displayOptions: show('generate', 'estimate'),
			options: [...definition.fields.map((field) => field.property), modelParametersField].sort((a, b) =>
				a.displayName.localeCompare(b.displayName),
			),
		},
		{
			displayName: 'Options',
			name: 'options',
			type: 'collection',
			placeholder: 'Add Option',
			default: {},
			displayOptions: show('generate', 'estimate', ...(jobs ? ['getJob'] : [])),
			options: optionFields(jobs),
		},
	);
	return properties;
}

function optionFields(jobs: boolean): INodeProperties[] {
	const options: INodeProperties[] = [
		{
			displayName: 'Put Output File in Field',
			name: 'binaryPropertyName',
			type: 'string',
			default: 'data',
			description: 'The name of the binary field to put the downloaded file in',
			displayOptions: { show: { '/operation': ['generate', 'getJob'] } },
		},
		{
			displayName: 'Idempotency Key',
			name: 'idempotencyKey',
			type: 'string',
			default: '',
			description:
				'Sent as the Idempotency-Key header: a request repeated with the same key is not charged a second time. Leave empty for a key made from the execution, node, run and item. If you set one, use an expression that differs for every item.',
			displayOptions: { show: { '/operation': ['generate'] } },
		},
		{
			displayName: 'Items in Flight',
			name: 'concurrency',
			type: 'number',
			typeOptions: { minValue: 1, maxValue: 50 },
			default: DEFAULT_CONCURRENCY,
			description: 'How many items are sent to the service at the same time',
		},
		{
			displayName: 'Max Cost (Microdollars)',
			name: 'maxCostMicro',
			type: 'number',
			typeOptions: { minValue: 0 },
			default: 0,
			description:
				'Refuse an item whose estimated cost is higher than this, before anything is charged. Each item is first estimated for free.',
			hint: '1,000,000 microdollars = 1 USD. 0 means no limit.',
			displayOptions: { show: { '/operation': ['generate'] } },
		},
		{
			displayName: 'Request Timeout (Seconds)',
			name: 'requestTimeout',
			type: 'number',
			typeOptions: { minValue: 1 },
			default: DEFAULT_REQUEST_TIMEOUT_S,
			description:
				'How long to wait for one answer before trying again. A retried generation carries the same idempotency key, so it is not charged twice.',
		},
	];
	if (jobs) {
		options.push({
			displayName: 'Wait Timeout (Seconds)',
			name: 'waitTimeout',
			type: 'number',
			typeOptions: { minValue: 1 },
			default: DEFAULT_WAIT_TIMEOUT_S,
			description:
				'How long to wait for a job before giving up. The job may still finish and be charged: fetch it later with Get Job.',
			displayOptions: { show: { '/operation': ['generate'] } },
		});
	}
	return options.sort((a, b) => a.displayName.localeCompare(b.displayName));
}

function article(noun: string): string {
	return /^[aeiou]/i.test(noun) ? 'an' : 'a';
}

/** The node's subtitle in the editor: the name of the chosen operation. */
export function operationSubtitle(definition: ModalityDefinition): string {
	const labels = [
		'generate: "Generate"',
		'estimate: "Estimate cost"',
		'getJob: "Get job"',
		// Sentence case, like the others: "List voices".
		...(definition.extraOperations ?? []).map(
			(extra) => `${extra.option.value}: "${extra.option.name.charAt(0)}${extra.option.name.slice(1).toLowerCase()}"`,
		),
	].join(', ');
	return `={{ ({ ${labels} })[$parameter["operation"]] }}`;
}

/** What every modality node's description has in common; each node adds its name, icon and texts. */
export function modalityNodeBase(definition: ModalityDefinition, displayName: string) {
	return {
		group: ['transform'],
		version: 1,
		defaults: { name: displayName },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'generationServiceApi', required: true }],
		properties: generationProperties(definition),
	} satisfies Omit<INodeTypeDescription, 'displayName' | 'name' | 'description'>;
}
