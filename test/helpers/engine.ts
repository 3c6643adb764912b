/**
 * Runs our nodes inside n8n's real execution engine (n8n-core's WorkflowExecute, real node-type
 * loading, real request and credential helpers, real binary data), against a sandbox on a real port.
 * See ../../README.md#writing-a-test for how to use it.
 */
import './engine-env';

import { Container } from '@n8n/di';
import {
	BinaryDataConfig,
	BinaryDataService,
	ExecutionLifecycleHooks,
	LoadOptionsContext,
	WorkflowExecute,
} from 'n8n-core';
import type {
	ICredentialDataDecryptedObject,
	ICredentials,
	ICredentialType,
	IDataObject,
	IHttpRequestOptions,
	INode,
	INodeCredentialsDetails,
	INodeExecutionData,
	INodeProperties,
	INodeType,
	INodeTypes,
	IRun,
	IBinaryData,
	IWorkflowBase,
	IWorkflowExecuteAdditionalData,
	IConnections,
} from 'n8n-workflow';
import { createRunExecutionData, ICredentialsHelper, isExpression, NodeHelpers, Workflow } from 'n8n-workflow';
import { randomUUID } from 'node:crypto';

import { GenerationServiceApi } from '../../credentials/GenerationServiceApi.credentials';

export const PACKAGE = 'n8n-nodes-generation-service';
const credentialType = new GenerationServiceApi();
const credentialTypes: Record<string, ICredentialType> = { [credentialType.name]: credentialType };

/** Resolves the credential's generic `authenticate` the way n8n's own CredentialsHelper does. */
class TestCredentialsHelper extends ICredentialsHelper {
	constructor(private readonly data: Record<string, ICredentialDataDecryptedObject>) {
		super();
	}
	getParentTypes(): string[] {
		return [];
	}
	async authenticate(
		credentials: ICredentialDataDecryptedObject,
		typeName: string,
		request: IHttpRequestOptions,
		workflow: Workflow,
		node: INode,
	): Promise<IHttpRequestOptions> {
		const { authenticate } = credentialTypes[typeName];
		if (typeof authenticate === 'function') return await authenticate(credentials, request);
		const resolve = (value: string) =>
			isExpression(value)
				? String(
						workflow.expression.getSimpleParameterValue(node, value, 'internal', { $credentials: credentials }, undefined, '') ??
							'',
					)
				: value;
		for (const [outer, values] of Object.entries(authenticate?.properties ?? {})) {
			const target = ((request as unknown as Record<string, IDataObject>)[outer] ??= {});
			for (const [key, value] of Object.entries(values as Record<string, string>)) target[resolve(key)] = resolve(value);
		}
		return request;
	}
	async preAuthentication() {
		return undefined;
	}
	async runPreAuthentication() {
		return undefined;
	}
	isCredentialUsableByNode() {
		return true;
	}
	async getCredentials(): Promise<ICredentials> {
		throw new Error('not used by these tests');
	}
	async getDecrypted(_data: unknown, _node: INodeCredentialsDetails, type: string) {
		return this.data[type];
	}
	async updateCredentials() {}
	async updateCredentialsOauthTokenData() {}
	getCredentialsProperties(): INodeProperties[] {
		return credentialType.properties;
	}
}

/** Binary data kept in memory as base64 ('default') or written to disk ('filesystem'). */
export async function initEngine(binaryMode: 'default' | 'filesystem' = 'default') {
	const config = Container.get(BinaryDataConfig);
	config.mode = binaryMode;
	(config as unknown as { availableModes: string[] }).availableModes = [binaryMode];
	await Container.get(BinaryDataService).init();
}

/** 1.x starts a ref'ed 60 s interval on first use; without this, jest would not exit. */
export async function shutdownEngine() {
	try {
		// eslint-disable-next-line @typescript-eslint/no-require-imports
		const { SSHClientsManager } = require('n8n-core/dist/execution-engine/ssh-clients-manager');
		(Container.get(SSHClientsManager) as { onShutdown: () => void }).onShutdown();
	} catch {
		// 2.x unrefs it and may not have the module at this path
	}
}

export interface NodeRun {
	/** The node's parameters as a saved workflow holds them. */
	parameters: INode['parameters'];
	/** Input items (the node receives them from a preceding node). Default: one empty item. */
	items?: IDataObject[];
	credentials: { apiKey: string; baseUrl: string };
	/** Node settings: "On Error: Continue" and "Retry On Fail". */
	continueOnFail?: boolean;
	retryOnFail?: { maxTries: number; waitBetweenTries: number };
	executionId?: string;
	/** The node's runs in one execution: its input is fed again for each (like a loop). Default 1. */
	runs?: number;
}

export interface NodeResult {
	run: IRun;
	/** The output items of the node's last run (empty when it failed). */
	items: INodeExecutionData[];
	/** Every run's output, in order. */
	runs: INodeExecutionData[][];
	/** The execution error, as n8n stores it (a plain serialized object). */
	error?: { name?: string; message: string; description?: string; httpCode?: string; context?: IDataObject };
	executionId: string;
}

/** The workflow `Items → node`, with the engine's additional data, as n8n would build it. */
function buildWorkflow(nodeType: INodeType, options: NodeRun, executionId: string) {
	const type = `${PACKAGE}.${nodeType.description.name}`;
	const nodeName = nodeType.description.defaults.name ?? 'Node';
	const node: INode = {
		id: randomUUID(),
		name: nodeName,
		type,
		typeVersion: 1,
		position: [200, 0],
		parameters: options.parameters,
		credentials: { generationServiceApi: { id: 'cred-1', name: 'Generation Service account' } },
		...(options.continueOnFail ? { onError: 'continueRegularOutput' as const } : {}),
		...(options.retryOnFail
			? { retryOnFail: true, maxTries: options.retryOnFail.maxTries, waitBetweenTries: options.retryOnFail.waitBetweenTries }
			: {}),
	};
	const source: INode = {
		id: randomUUID(),
		name: 'Items',
		type: 'test.items',
		typeVersion: 1,
		position: [0, 0],
		parameters: {},
	};
	const items = (options.items ?? [{}]).map((json) => ({ json }));
	const nodeTypes: Record<string, INodeType> = { [type]: nodeType, 'test.items': itemsNode(items) };
	const types: INodeTypes = {
		getByName: (name) => nodeTypes[name],
		getByNameAndVersion: (name, version) => NodeHelpers.getVersionedNodeType(nodeTypes[name], version),
		getKnownTypes: () => ({}),
	};
	const connections: IConnections = { Items: { main: [[{ node: nodeName, type: 'main', index: 0 }]] } };
	const workflowData = {
		id: 'wf-tests',
		name: 'tests',
		nodes: [source, node],
		connections,
		active: false,
		settings: {},
		createdAt: new Date(),
		updatedAt: new Date(),
	} as unknown as IWorkflowBase;
	const workflow = new Workflow({ id: workflowData.id, nodes: [source, node], connections, active: false, nodeTypes: types });
	const additionalData = {
		credentialsHelper: new TestCredentialsHelper({ generationServiceApi: options.credentials }),
		hooks: new ExecutionLifecycleHooks('manual', executionId, workflowData),
		executionId,
		variables: {},
		restApiUrl: 'http://127.0.0.1/rest',
		instanceBaseUrl: 'http://127.0.0.1/',
		webhookBaseUrl: 'http://127.0.0.1/webhook',
		webhookWaitingBaseUrl: 'http://127.0.0.1/webhook-waiting',
		webhookTestBaseUrl: 'http://127.0.0.1/webhook-test',
		formWaitingBaseUrl: 'http://127.0.0.1/form-waiting',
		currentNodeExecutionIndex: 0,
	} as unknown as IWorkflowExecuteAdditionalData;
	return { workflow, node, source, nodeName, additionalData };
}

/** Runs `Items → node` through WorkflowExecute. The returned promise is PCancelable-backed: see `cancel`. */
export function runNode(nodeType: INodeType, options: NodeRun): Promise<NodeResult> & { cancel: () => void } {
	const executionId = options.executionId ?? randomUUID();
	const { workflow, source, nodeName, additionalData } = buildWorkflow(nodeType, options, executionId);
	const stack = Array.from({ length: options.runs ?? 1 }, () => ({
		node: source,
		data: { main: [[{ json: {} }]] },
		source: null,
	}));
	const runData = createRunExecutionData({ executionData: { nodeExecutionStack: stack } } as never);
	const execution = new WorkflowExecute(additionalData, 'manual', runData).processRunExecutionData(workflow);
	const result = (async (): Promise<NodeResult> => {
		const run = await execution;
		const nodeRuns = run.data.resultData.runData[nodeName] ?? [];
		const runs = nodeRuns.map((task) => task.data?.main?.[0] ?? []);
		const error = run.data.resultData.error as NodeResult['error'];
		return { run, items: runs[runs.length - 1] ?? [], runs, error, executionId };
	})();
	return Object.assign(result, { cancel: () => execution.cancel() });
}

/** What the editor calls to fill a dropdown or a resource locator list (methods.listSearch / loadOptions). */
export function loadOptionsContext(
	nodeType: INodeType,
	options: Pick<NodeRun, 'parameters' | 'credentials'>,
	path = 'parameters.model',
) {
	const { workflow, node, additionalData } = buildWorkflow(nodeType, options, randomUUID());
	return new LoadOptionsContext(workflow, node, additionalData, path);
}

/** Resolves one of the credential's expressions (e.g. its test request's baseURL) as n8n does. */
export function resolveCredentialExpression(value: string, credentials: NodeRun['credentials']): string {
	const { workflow, node } = buildWorkflow(new GenerationServiceApiProbe(), { parameters: {}, credentials }, randomUUID());
	return String(
		workflow.expression.getSimpleParameterValue(node, value, 'internal', { $credentials: credentials }, undefined, '') ?? '',
	);
}

/** A node type with no behaviour, to host expressions. */
class GenerationServiceApiProbe implements INodeType {
	description = {
		displayName: 'Probe',
		name: 'probe',
		group: ['transform'],
		version: 1,
		description: 'Probe',
		defaults: { name: 'Probe' },
		inputs: ['main'],
		outputs: ['main'],
		properties: [],
	} as unknown as INodeType['description'];
}

/** A tiny source node: emits the given items (each run of it emits them again). */
function itemsNode(items: INodeExecutionData[]): INodeType {
	return {
		description: {
			displayName: 'Items',
			name: 'items',
			group: ['input'],
			version: 1,
			description: 'Test items',
			defaults: { name: 'Items' },
			inputs: ['main'],
			outputs: ['main'],
			properties: [],
		} as unknown as INodeType['description'],
		async execute() {
			return [items.map((item) => ({ json: { ...item.json } }))];
		},
	};
}

/** The bytes of a binary item, whichever binary data mode stored them. */
export async function binaryBytes(binary: IBinaryData): Promise<Buffer> {
	return await Container.get(BinaryDataService).getAsBuffer(binary);
}

export { BinaryDataService, Container };
