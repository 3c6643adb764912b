// Types of scripts/n8n.js, for the end-to-end tests (test/e2e).
import type { ChildProcess } from 'node:child_process';

export type Line = '1' | '2';

export interface Owner {
	email: string;
	firstName: string;
	lastName: string;
	password: string;
}

export interface WorkflowNode {
	id: string;
	name: string;
	type: string;
	typeVersion: number;
	parameters: Record<string, unknown>;
	credentials?: Record<string, { id: string; name: string }>;
	webhookId?: string;
	[key: string]: unknown;
}

export interface Workflow {
	id: string;
	name: string;
	versionId: string;
	active: boolean;
	nodes: WorkflowNode[];
	connections: Record<string, unknown>;
	[key: string]: unknown;
}

export interface BinaryEntry {
	mimeType: string;
	fileExtension?: string;
	fileName?: string;
	fileSize?: string;
	data: string;
	id?: string;
	[key: string]: unknown;
}

export interface OutputItem {
	json: Record<string, any>;
	binary?: Record<string, BinaryEntry>;
	pairedItem?: unknown;
}

export interface Execution {
	id: string;
	status: string;
	mode: string;
	finished: boolean;
	workflowId: string;
	stoppedAt: string | null;
	data: {
		resultData: {
			runData: Record<string, Array<{ data?: { main: OutputItem[][] }; error?: any }>>;
			error?: any;
			lastNodeExecuted?: string;
		};
	};
}

export interface RawAnswer {
	status: number;
	headers: Headers;
	text: string;
	json: any;
}

export class N8nClient {
	constructor(baseUrl: string);
	baseUrl: string;
	cookie: string;
	raw(
		method: string,
		path: string,
		options?: { body?: unknown; headers?: Record<string, string>; auth?: boolean },
	): Promise<RawAnswer>;
	rest<T = any>(method: string, path: string, body?: unknown): Promise<T>;
	binaryBytes(binary: BinaryEntry): Promise<Buffer>;
	createWorkflow(workflow: unknown): Promise<Workflow>;
	runManually(workflowId: string): Promise<string>;
	activate(workflowId: string): Promise<Workflow>;
	executionsOf(workflowId: string): Promise<Array<{ id: string; status: string; mode: string }>>;
	waitForExecution(id: string, parse: (text: string) => any, options?: { timeoutMs?: number }): Promise<Execution>;
	signIn(owner: Owner): Promise<'created' | 'logged-in'>;
}

export interface N8nHandle {
	url: string;
	port: number;
	line: Line;
	version: string;
	userFolder: string;
	owner: Owner;
	client: N8nClient;
	parse: (text: string) => any;
	process: ChildProcess;
	logs(): string;
	exited(): { code: number | null; signal: string | null } | null;
	stop(): Promise<void>;
}

export const ROOT: string;
export const NODE24_BIN: string;
export const DEFAULT_OWNER: Owner;
export const EXAMPLE_CREDENTIAL_NAME: string;
export const EXAMPLE_BASE_URL: string;

export function ensureNode24(): Promise<string>;
export function ensureN8n(line: Line | string, options?: { timeoutMs?: number }): Promise<string>;
export function pinnedVersion(line: Line | string): string;
export function packPackage(destination?: string): Promise<string>;
export function installPack(userFolder: string, tarball: string): Promise<{ name: string; version: string; dir: string }>;
export function freePort(): Promise<number>;
export function startN8n(options: {
	line?: Line | string;
	port?: number;
	brokerPort?: number;
	userFolder?: string;
	env?: Record<string, string>;
	owner?: Owner;
	logFile?: string;
	echo?: boolean;
	startTimeoutMs?: number;
}): Promise<N8nHandle>;
export function readExamples(): Array<{ file: string; workflow: any }>;
export function prepareExample(workflow: any, options: { credential?: { id: string; name: string }; baseUrl?: string }): any;
export function createSandboxCredential(
	client: N8nClient,
	options: { apiKey: string; baseUrl: string; name?: string },
): Promise<{ id: string; name: string; type: string }>;
export function importExamples(
	client: N8nClient,
	options: { credential: { id: string; name: string }; baseUrl: string; skipNames?: string[] },
): Promise<Array<{ file: string; workflow: Workflow }>>;
export function waitForWebhook(url: string, options?: { body?: unknown; timeoutMs?: number }): Promise<number>;
