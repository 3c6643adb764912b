#!/usr/bin/env node
// `npm run dev`: the package inside a real n8n, against the local sandbox, with the example
// workflows ready to run.
//
//   1. builds the package (npm run build) and packs it (npm pack);
//   2. installs Node 24 and the pinned n8n into .tools/ and tools/n8n-<line>/ on first use;
//   3. starts the sandbox on 127.0.0.1:4010 and n8n on 127.0.0.1:5678 (SQLite, data kept in
//      .n8n-dev/n8n-<line>/), with the package installed from its tarball into n8n's
//      community-nodes folder;
//   4. signs in (an owner account is set up on first start), creates or updates the credential
//      "Generation Service (sandbox)", imports the example workflows that are not there yet and
//      activates the trigger workflow;
//   5. prints the editor URL, the login and what to click. Ctrl-C stops both.
//
// Env: N8N_LINE (1 or 2, default 1), N8N_PORT (default 5678), SANDBOX_PORT (default 4010),
// SANDBOX_JOB_MS (run time of every sandbox job), DEV_FRESH=1 (start from an empty n8n).
'use strict';

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const n8n = require('./n8n');

const ROOT = n8n.ROOT;
const LINE = process.env.N8N_LINE || '1';
const N8N_PORT = Number(process.env.N8N_PORT || 5678);
const SANDBOX_PORT = Number(process.env.SANDBOX_PORT || 4010);
const DEV_DIR = path.join(ROOT, '.n8n-dev');
const USER_FOLDER = path.join(DEV_DIR, `n8n-${LINE}`);
const STATE_FILE = path.join(DEV_DIR, 'sandbox.json');

function step(message) {
	console.log(`\n> ${message}`);
}

/** The sandbox key is kept in .n8n-dev/, so the saved credential keeps working across restarts. */
function sandboxApiKey() {
	try {
		const { apiKey } = JSON.parse(fs.readFileSync(STATE_FILE, 'utf8'));
		if (typeof apiKey === 'string' && /^gs_test_[0-9a-f]{40}$/.test(apiKey)) return apiKey;
	} catch {
		// first start
	}
	const apiKey = `gs_test_${require('node:crypto').randomBytes(20).toString('hex')}`;
	fs.mkdirSync(DEV_DIR, { recursive: true });
	fs.writeFileSync(STATE_FILE, JSON.stringify({ apiKey }, null, 2));
	return apiKey;
}

async function upsertCredential(client, { apiKey, baseUrl }) {
	const existing = (await client.rest('GET', '/credentials')).find(
		(credential) => credential.name === n8n.EXAMPLE_CREDENTIAL_NAME && credential.type === 'generationServiceApi',
	);
	if (!existing) return await n8n.createSandboxCredential(client, { apiKey, baseUrl });
	await client.rest('PATCH', `/credentials/${existing.id}`, {
		name: existing.name,
		type: existing.type,
		data: { apiKey, baseUrl },
	});
	return existing;
}

async function main() {
	if (!['1', '2'].includes(LINE)) throw new Error(`N8N_LINE must be 1 or 2, not "${LINE}"`);
	const started = Date.now();

	step('Building the package (npm run build)');
	execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
	const tarball = await n8n.packPackage();
	console.log(`  packed ${path.basename(tarball)}`);

	step(`Installing n8n ${n8n.pinnedVersion(LINE)} under Node 24 if needed (the first time takes a few minutes)`);
	await n8n.ensureN8n(LINE);

	if (process.env.DEV_FRESH === '1') fs.rmSync(USER_FOLDER, { recursive: true, force: true });
	fs.mkdirSync(USER_FOLDER, { recursive: true });
	const installed = await n8n.installPack(USER_FOLDER, tarball);
	fs.rmSync(path.dirname(tarball), { recursive: true, force: true });
	console.log(`  installed ${installed.name}@${installed.version} into ${path.relative(ROOT, path.dirname(installed.dir))}`);

	step(`Starting the sandbox on http://127.0.0.1:${SANDBOX_PORT}`);
	const { startSandbox } = require(path.join(ROOT, 'dist', 'test', 'sandbox', 'index.js'));
	const jobMs = process.env.SANDBOX_JOB_MS ? Number(process.env.SANDBOX_JOB_MS) : undefined;
	const sandbox = await startSandbox({
		port: SANDBOX_PORT,
		apiKey: sandboxApiKey(),
		jobDurationMs: jobMs === undefined ? undefined : { video: jobMs, music: jobMs, voice: jobMs, threeD: jobMs },
	});

	let instance;
	let stopping = false;
	const stop = async (code) => {
		if (stopping) return;
		stopping = true;
		console.log('\nStopping n8n and the sandbox...');
		await Promise.allSettled([instance?.stop(), sandbox.stop()]);
		process.exit(code);
	};
	process.on('SIGINT', () => void stop(0));
	process.on('SIGTERM', () => void stop(0));

	step(`Starting n8n ${n8n.pinnedVersion(LINE)} on http://127.0.0.1:${N8N_PORT} (log: ${path.relative(ROOT, path.join(DEV_DIR, `n8n-${LINE}.log`))})`);
	try {
		instance = await n8n.startN8n({
			line: LINE,
			port: N8N_PORT,
			userFolder: USER_FOLDER,
			logFile: path.join(DEV_DIR, `n8n-${LINE}.log`),
		});
	} catch (error) {
		await sandbox.stop();
		throw error;
	}
	instance.process.on('exit', (code) => {
		if (!stopping) {
			console.error(`\nn8n stopped unexpectedly (${code}); see .n8n-dev/n8n-${LINE}.log`);
			void stop(1);
		}
	});

	step('Setting up the credential and the example workflows');
	const credential = await upsertCredential(instance.client, { apiKey: sandbox.apiKey, baseUrl: sandbox.baseUrl });
	const present = await instance.client.rest('GET', '/workflows');
	const existing = (Array.isArray(present) ? present : present.data ?? []).filter((workflow) => !workflow.isArchived);
	const imported = await n8n.importExamples(instance.client, {
		credential,
		baseUrl: instance.url,
		skipNames: existing.map((workflow) => workflow.name),
	});
	const all = [...existing, ...imported.map(({ workflow }) => workflow)];
	for (const workflow of all) {
		const full = await instance.client.rest('GET', `/workflows/${workflow.id}`);
		const isTrigger = full.nodes.some((node) => node.type === 'n8n-nodes-generation-service.generationServiceTrigger');
		if (isTrigger && !full.active) await instance.client.activate(full.id);
	}
	console.log(`  credential "${credential.name}" → ${sandbox.baseUrl}; ${imported.length} example workflow(s) imported, ${existing.length} already there`);

	const byName = (fragment) => all.find((workflow) => workflow.name.includes(fragment));
	const link = (fragment) => {
		const workflow = byName(fragment);
		return workflow ? `${instance.url}/workflow/${workflow.id}` : '(not imported)';
	};
	const lines = [
		'',
		'='.repeat(78),
		` n8n ${instance.version} is running with n8n-nodes-generation-service@${installed.version} (${Math.round((Date.now() - started) / 1000)} s)`,
		'='.repeat(78),
		'',
		`  Editor:    ${instance.url}/`,
		`  Sign in:   ${instance.owner.email}  /  ${instance.owner.password}`,
		`  Sandbox:   ${sandbox.baseUrl}  (API key ${sandbox.apiKey}; nothing is really charged)`,
		`             its ledger: ${sandbox.baseUrl}/_sandbox/state`,
		'',
		'  What to click:',
		`  1. Open "Generation Service: image to a binary file"   ${link('image to a binary file')}`,
		'     and click "Execute workflow". Open the Generate Image node: the PNG is under Binary.',
		`  2. "Generation Service: video, wait for the job, MP4"   ${link('video, wait')}`,
		'     waits a few seconds for the job and shows the MP4.',
		`  3. "Generation Service: music, result delivered to a webhook"   ${link('music, result delivered')}`,
		'     returns the job ID at once; a few seconds later the active workflow',
		`     "Generation Service: music job finished (trigger)" runs: see its Executions tab   ${link('job finished (trigger)')}`,
		`  4. "Generation Service: credits and usage report"   ${link('credits and usage')}`,
		`  5. "Generation Service: cost-guarded batch"   ${link('cost-guarded')}`,
		'     three images are made and charged; the one above Max Cost is refused before any charge.',
		'',
		'  Add your own: in a workflow, press Tab and search "Generation Service"; pick the credential',
		`  "${n8n.EXAMPLE_CREDENTIAL_NAME}".`,
		'',
		'  Ctrl-C stops n8n and the sandbox. Data is kept in .n8n-dev/ (DEV_FRESH=1 starts anew).',
		'',
	];
	console.log(lines.join('\n'));
}

main().catch((error) => {
	console.error(`\nnpm run dev failed: ${error.message}`);
	process.exit(1);
});
