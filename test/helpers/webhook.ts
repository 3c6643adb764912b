/**
 * Serves a trigger node's webhook over real HTTP, the way n8n's production webhook path does:
 * each request gets n8n-core's own WebhookContext (with express-like request and response objects),
 * the node's `webhook()` decides the answer, a returned `workflowData` starts a real execution
 * (WorkflowExecute), and the workflow's static data is saved after each request and loaded again for
 * the next one, as n8n keeps it in its database.
 */
import './engine-env';

import { ExecutionLifecycleHooks, WebhookContext, WorkflowExecute } from 'n8n-core';
import type {
	IDataObject,
	INode,
	INodeExecutionData,
	INodeParameters,
	INodeType,
	INodeTypes,
	IWebhookData,
	IWebhookResponseData,
	IWorkflowBase,
	IWorkflowExecuteAdditionalData,
} from 'n8n-workflow';
import { createRunExecutionData, NodeHelpers, Workflow } from 'n8n-workflow';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

import { PACKAGE } from './engine';

/** One request the endpoint handled: what it answered, and the execution it started, if any. */
export interface HandledRequest {
	status: number;
	/** The answer's JSON body. */
	answer: unknown;
	/** The trigger's output items in the execution the request started; undefined when none started. */
	execution?: INodeExecutionData[];
}

export interface TriggerEndpoint {
	/** The node's Production URL: `<base>/webhook/<webhookId>/webhook`. */
	readonly url: string;
	readonly handled: HandledRequest[];
	/** The trigger output of every execution started, in order. */
	executions(): INodeExecutionData[][];
	/** The workflow's static data as saved after the last request. */
	savedStaticData(): IDataObject;
	/** Resolves once `count` requests in all have been handled (answered and, if started, executed). */
	handledCount(count: number): Promise<void>;
	stop(): Promise<void>;
}

/** The express members n8n nodes use on a response: status, json, send, end, headers. */
function expressResponse(res: ServerResponse) {
	const response = {
		/** The last JSON body sent, for the test's record. */
		sentJson: undefined as unknown,
		status(code: number) {
			res.statusCode = code;
			return response;
		},
		setHeader(name: string, value: string) {
			res.setHeader(name, value);
			return response;
		},
		header(name: string, value: string) {
			return response.setHeader(name, value);
		},
		json(body: unknown) {
			response.sentJson = body;
			if (!res.headersSent) res.setHeader('Content-Type', 'application/json; charset=utf-8');
			return response.end(JSON.stringify(body));
		},
		send(body?: unknown) {
			if (body !== null && typeof body === 'object' && !Buffer.isBuffer(body)) return response.json(body);
			return response.end(body as string | Buffer | undefined);
		},
		end(body?: string | Buffer) {
			if (!res.writableEnded) res.end(body);
			return response;
		},
		get headersSent() {
			return res.headersSent;
		},
		get writableEnded() {
			return res.writableEnded;
		},
	};
	return response;
}

/** Express's query object: a repeated key becomes an array. */
function queryOf(url: URL): Record<string, string | string[]> {
	const query: Record<string, string | string[]> = {};
	for (const key of new Set(url.searchParams.keys())) {
		const values = url.searchParams.getAll(key);
		query[key] = values.length === 1 ? values[0] : values;
	}
	return query;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
	const chunks: Buffer[] = [];
	for await (const chunk of req) chunks.push(chunk as Buffer);
	return Buffer.concat(chunks);
}

export async function serveTrigger(
	nodeType: INodeType,
	parameters: INodeParameters,
	options: { staticData?: IDataObject } = {},
): Promise<TriggerEndpoint> {
	const type = `${PACKAGE}.${nodeType.description.name}`;
	const webhookId = randomUUID();
	const node: INode = {
		id: randomUUID(),
		name: nodeType.description.defaults.name ?? 'Trigger',
		type,
		typeVersion: 1,
		position: [0, 0],
		parameters,
		webhookId,
	};
	const nodeTypes: INodeTypes = {
		getByName: () => nodeType,
		getByNameAndVersion: (_name, version) => NodeHelpers.getVersionedNodeType(nodeType, version),
		getKnownTypes: () => ({}),
	};
	const workflowData = {
		id: `wf-${webhookId.slice(0, 8)}`,
		name: 'trigger tests',
		nodes: [node],
		connections: {},
		active: true,
		settings: {},
	} as unknown as IWorkflowBase;
	const webhookDescription = nodeType.description.webhooks![0];
	const webhookPath = `/webhook/${webhookId}/${webhookDescription.path}`;

	// What n8n's database would hold between requests: plain JSON.
	let savedStaticData: IDataObject = JSON.parse(JSON.stringify(options.staticData ?? {}));
	const handled: HandledRequest[] = [];
	const waiters: Array<{ count: number; resolve: () => void }> = [];
	let baseUrl = '';

	const additionalDataFor = (executionId: string, extra: IDataObject = {}) =>
		({
			hooks: new ExecutionLifecycleHooks('webhook', executionId, workflowData),
			executionId,
			variables: {},
			restApiUrl: `${baseUrl}/rest`,
			instanceBaseUrl: `${baseUrl}/`,
			webhookBaseUrl: `${baseUrl}/webhook`,
			webhookWaitingBaseUrl: `${baseUrl}/webhook-waiting`,
			webhookTestBaseUrl: `${baseUrl}/webhook-test`,
			formWaitingBaseUrl: `${baseUrl}/form-waiting`,
			currentNodeExecutionIndex: 0,
			...extra,
		}) as unknown as IWorkflowExecuteAdditionalData;

	async function execute(workflow: Workflow, result: IWebhookResponseData): Promise<INodeExecutionData[]> {
		const executionId = randomUUID();
		const runData = createRunExecutionData({
			executionData: {
				nodeExecutionStack: [{ node, data: { main: result.workflowData ?? [] }, source: null }],
			},
		} as never);
		const run = await new WorkflowExecute(additionalDataFor(executionId), 'webhook', runData).processRunExecutionData(workflow);
		if (run.data.resultData.error) throw new Error(`The execution failed: ${run.data.resultData.error.message}`);
		return run.data.resultData.runData[node.name]?.[0]?.data?.main?.[0] ?? [];
	}

	async function handle(req: IncomingMessage, res: ServerResponse): Promise<HandledRequest> {
		const response = expressResponse(res);
		const answer = (status: number, body: unknown): HandledRequest => {
			response.status(status).json(body);
			return { status, answer: body };
		};
		const url = new URL(req.url ?? '/', baseUrl);
		const raw = await readBody(req);
		if (req.method !== 'POST' || url.pathname !== webhookPath) {
			return answer(404, { message: `The requested webhook "${req.method} ${url.pathname}" is not registered.` });
		}
		// n8n parses JSON bodies before any node sees them, and refuses JSON it cannot parse.
		let body: unknown = raw.toString('utf8');
		if (/^application\/json/i.test(req.headers['content-type'] ?? '') && raw.length > 0) {
			try {
				body = JSON.parse(raw.toString('utf8'));
			} catch {
				return answer(422, { message: 'Failed to parse request body' });
			}
		}
		const request = { method: req.method, url: req.url, headers: req.headers, query: queryOf(url), params: {}, body, rawBody: raw };

		const workflow = new Workflow({
			id: workflowData.id,
			name: workflowData.name,
			nodes: [node],
			connections: {},
			active: true,
			nodeTypes,
			staticData: JSON.parse(JSON.stringify(savedStaticData)),
		});
		const additionalData = additionalDataFor(randomUUID(), { httpRequest: request, httpResponse: response });
		const webhookData: IWebhookData = {
			httpMethod: 'POST',
			node: node.name,
			path: `${webhookId}/${webhookDescription.path}`,
			webhookDescription,
			workflowId: workflow.id,
			workflowExecuteAdditionalData: additionalData,
			webhookId,
		};
		const context = new WebhookContext(workflow, node, additionalData, 'webhook', webhookData, [], null);
		let result: IWebhookResponseData;
		try {
			result = await nodeType.webhook!.call(context);
		} catch (error) {
			return answer(500, { message: `Error in workflow: ${(error as Error).message}` });
		}
		// n8n saves the static data after the webhook ran, when it changed.
		if ((workflow.staticData as { __dataChanged?: boolean }).__dataChanged) {
			savedStaticData = JSON.parse(JSON.stringify(workflow.staticData));
		}

		if (result.noWebhookResponse) {
			// The node answered itself; an unanswered request would hang the sender.
			if (!res.writableEnded) return answer(500, { message: 'The node did not answer' });
			return { status: res.statusCode, answer: response.sentJson };
		}
		if (result.workflowData === undefined) {
			return answer(200, result.webhookResponse ?? { message: 'Webhook call received' });
		}
		// n8n answers "onReceived" webhooks once the execution has started; here the answer waits for
		// its end, so that a test which sees the answer also sees the execution.
		const execution = await execute(workflow, result);
		return { ...answer(200, { message: 'Workflow was started' }), execution };
	}

	const server = createServer((req, res) => {
		void handle(req, res)
			.catch((error: Error): HandledRequest => {
				if (!res.writableEnded) expressResponse(res).status(500).json({ message: error.message });
				return { status: 500, answer: { message: error.message } };
			})
			.then((outcome) => {
				handled.push(outcome);
				for (const waiter of waiters.filter((w) => handled.length >= w.count)) {
					waiters.splice(waiters.indexOf(waiter), 1);
					waiter.resolve();
				}
			});
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

	return {
		url: `${baseUrl}${webhookPath}`,
		handled,
		executions: () => handled.filter((h) => h.execution !== undefined).map((h) => h.execution!),
		savedStaticData: () => savedStaticData,
		handledCount: async (count) => {
			if (handled.length >= count) return;
			await new Promise<void>((resolve) => waiters.push({ count, resolve }));
		},
		stop: async () => {
			server.closeAllConnections();
			await new Promise<void>((resolve) => server.close(() => resolve()));
		},
	};
}
