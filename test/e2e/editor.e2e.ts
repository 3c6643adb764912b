/**
 * End-to-end: the n8n editor in a real browser (Debian's Chromium driven by playwright-core), on
 * each n8n line of E2E_LINES (default "1 2"), with the packed package installed and the sandbox
 * behind a saved credential.
 *
 * As a person would: sign in through the sign-in form, open a new workflow, and for each of the
 * seven nodes open the node panel with "+", search for the node, pick it and its action, then read
 * the node's parameters: the labels, defaults, placeholders, hints and notices the editor shows
 * must be the ones the node describes, the credential selector offers "Generation Service API",
 * the model list comes from the service, every "Add Field" / "Add Option" item can be added, and
 * the icons load. Each parameters panel is saved as a PNG under test-artifacts/editor/<line>/ to
 * be looked at.
 *
 * Run with `npm run test:e2e` (it builds, installs the n8n lines and runs the *.e2e.ts files).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import type { Browser, BrowserContext, Page } from 'playwright-core';

import { GenerationServiceAccount } from '../../nodes/GenerationServiceAccount/GenerationServiceAccount.node';
import { GenerationServiceImage } from '../../nodes/GenerationServiceImage/GenerationServiceImage.node';
import { GenerationServiceMusic } from '../../nodes/GenerationServiceMusic/GenerationServiceMusic.node';
import { GenerationServiceThreeD } from '../../nodes/GenerationServiceThreeD/GenerationServiceThreeD.node';
import { GenerationServiceTrigger } from '../../nodes/GenerationServiceTrigger/GenerationServiceTrigger.node';
import { GenerationServiceVideo } from '../../nodes/GenerationServiceVideo/GenerationServiceVideo.node';
import { GenerationServiceVoice } from '../../nodes/GenerationServiceVoice/GenerationServiceVoice.node';
import * as n8n from '../../scripts/n8n';
import type { N8nHandle } from '../../scripts/n8n';
import { startSandbox, type Sandbox } from '../sandbox';
import { MODELS, type Modality } from '../sandbox/catalog';
import { Editor, eventually, expectText, launchChromium, plain, shown, shownProperties, tidy, type Property } from './browser';

const LINES = (process.env.E2E_LINES ?? '1 2').split(/[\s,]+/).filter(Boolean);
const ARTIFACTS = join(n8n.ROOT, 'test-artifacts', 'editor');
const PACKAGE = 'n8n-nodes-generation-service';
const CREDENTIAL_TYPE = 'Generation Service API';

interface NodeDescription {
	displayName: string;
	description: string;
	icon?: unknown;
	credentials?: unknown[];
	properties: unknown[];
}

/** One picture: a node added with one of its actions, the action's parameter values. */
interface Shot {
	file: string;
	action: string;
	values: Record<string, unknown>;
	/** The model list of this modality is opened, checked and photographed. */
	modality?: Modality;
}

interface NodeCase {
	description: NodeDescription;
	shots: Shot[];
}

const modalityShots = (file: string, action: string, modality: Modality, extra: Shot[] = []): Shot[] => [
	{ file, action, values: { operation: 'generate' }, modality },
	...extra,
];

const CASES: NodeCase[] = [
	// A workflow starts with a trigger: on the empty canvas the panel offers triggers first.
	{
		description: new GenerationServiceTrigger().description,
		shots: [{ file: 'trigger', action: 'On completed', values: { events: ['completed'] } }],
	},
	{ description: new GenerationServiceImage().description, shots: modalityShots('image', 'Generate an image', 'image') },
	{
		description: new GenerationServiceVideo().description,
		shots: modalityShots('video', 'Generate a video', 'video', [
			{ file: 'video-get-job', action: 'Get a video job', values: { operation: 'getJob' } },
		]),
	},
	{ description: new GenerationServiceMusic().description, shots: modalityShots('music', 'Generate a music track', 'music') },
	{ description: new GenerationServiceVoice().description, shots: modalityShots('voice', 'Generate a speech clip', 'voice') },
	{ description: new GenerationServiceThreeD().description, shots: modalityShots('threeD', 'Generate a 3D model', 'threeD') },
	{
		description: new GenerationServiceAccount().description,
		shots: [
			{ file: 'account', action: 'Get the credit balance', values: { resource: 'credit', operation: 'get' } },
			{ file: 'account-api-key', action: 'Create an API key', values: { resource: 'apiKey', operation: 'create' } },
			{ file: 'account-usage-summary', action: 'Get a usage summary', values: { resource: 'usage', operation: 'getSummary' } },
			{ file: 'account-transactions', action: 'Get transactions', values: { resource: 'usage', operation: 'getTransactions' } },
		],
	},
];

/** The icon file a node description names: { light: 'file:../../icons/image.svg' } gives image.svg. */
function iconFile(description: NodeDescription): string {
	const icon = description.icon as { light: string } | string;
	const path = typeof icon === 'string' ? icon : icon.light;
	return path.replace(/^file:/, '').split('/').pop()!;
}

let browser: Browser;
let tarball: string;
beforeAll(async () => {
	mkdirSync(ARTIFACTS, { recursive: true });
	browser = await launchChromium();
	tarball = await n8n.packPackage(mkdtempSync(join(tmpdir(), 'gs-editor-pack-')));
});

afterAll(async () => {
	await browser?.close();
	if (tarball) rmSync(dirname(tarball), { recursive: true, force: true });
});

describe.each(LINES)('the n8n %s.x editor in Chromium', (line) => {
	const folder = join(ARTIFACTS, line);
	const timings: Record<string, number> = {};
	let sandbox: Sandbox;
	let instance: N8nHandle;
	let context: BrowserContext;
	let page: Page;
	let editor: Editor;
	/** Answers the editor got that point at our package or its dynamic parameters and failed. */
	const failedResponses: string[] = [];
	/** Errors in the page that name our package. */
	const pageErrors: string[] = [];
	let credentialChecked = false;

	beforeAll(async () => {
		const started = Date.now();
		rmSync(folder, { recursive: true, force: true });
		mkdirSync(folder, { recursive: true });
		sandbox = await startSandbox();
		const userFolder = mkdtempSync(join(tmpdir(), `gs-editor-n8n-${line}-`));
		await n8n.installPack(userFolder, tarball);
		const logFile = join(folder, 'n8n.log');
		instance = await n8n.startN8n({ line, userFolder, logFile });
		await n8n.createSandboxCredential(instance.client, { apiKey: sandbox.apiKey, baseUrl: sandbox.baseUrl });

		context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
		page = await context.newPage();
		page.setDefaultTimeout(30_000);
		// "Leave without saving?" when a failed step leaves for a new workflow.
		page.on('dialog', (dialog) => void dialog.accept().catch(() => undefined));
		page.on('response', (response) => {
			const url = response.url();
			// (The editor also asks /schemas/<node type>/<version>.json for an output preview, which
			// community nodes do not ship: those 404s are n8n's normal case and are left out.)
			const ours = (url.includes(PACKAGE) && !url.includes('/schemas/')) || url.includes('/rest/dynamic-node-parameters');
			if (response.status() >= 400 && ours) {
				failedResponses.push(`${response.status()} ${response.request().method()} ${url}`);
			}
		});
		const noteError = (text: string) => {
			if (/generation-?service/i.test(text)) pageErrors.push(text.slice(0, 500));
		};
		page.on('pageerror', (error) => noteError(`${error.message}\n${error.stack ?? ''}`));
		page.on('console', (message) => {
			if (message.type() === 'error') noteError(message.text());
		});
		editor = new Editor(page, instance.url);
		timings.start = Date.now() - started;
	});

	afterAll(async () => {
		await context?.close();
		await instance?.stop();
		await sandbox?.stop();
		if (instance) rmSync(instance.userFolder, { recursive: true, force: true });
		const total = Object.values(timings).reduce((sum, ms) => sum + ms, 0);
		const lines = Object.entries(timings).map(([step, ms]) => `  ${step}: ${(ms / 1000).toFixed(1)} s`);
		process.stderr.write(`[editor.e2e] n8n ${line}.x: ${(total / 1000).toFixed(1)} s\n${lines.join('\n')}\n`);
	});

	/** Runs a step; on failure leaves a picture of the whole window beside the others. */
	const step = async (name: string, body: () => Promise<void>) => {
		const started = Date.now();
		try {
			await body();
		} catch (error) {
			await page?.screenshot({ path: join(folder, `failed-${name}.png`), fullPage: true }).catch(() => undefined);
			throw error;
		} finally {
			timings[name] = Date.now() - started;
		}
	};

	let signedIn = false;
	/** Signed in, on a workflow's canvas (each node test can also run alone, with -t). */
	const onCanvas = async () => {
		if (!signedIn) {
			await editor.signIn(instance.owner.email, instance.owner.password);
			signedIn = true;
		}
		if (!/\/workflow\//.test(page.url())) await editor.newWorkflow();
		else await editor.backToCanvas();
	};

	it('signs in through the sign-in form and opens a new workflow', async () => {
		await step('sign-in', async () => {
			await onCanvas();
			await page.getByTestId('canvas-add-button').waitFor();
		});
	});

	/**
	 * Checks what the editor shows of each parameter against the description: the value of a
	 * dropdown or switch is its default, a text or number field holds its default and shows its
	 * placeholder, and a hint is shown under its field.
	 */
	const checkFields = async (properties: Property[], values: Record<string, unknown> = {}) => {
		for (const property of properties) {
			const input = editor.input(property.name);
			const value = property.name in values ? values[property.name] : property.default;
			if (property.type === 'options') {
				const option = (property.options ?? []).find((entry) => 'value' in entry && entry.value === value) as
					| { name: string }
					| undefined;
				if (option) expect({ [property.name]: await input.locator('input').first().inputValue() }).toEqual({ [property.name]: option.name });
			} else if (property.type === 'boolean') {
				const checked = await input.locator('input[role="switch"], input[type="checkbox"]').first().getAttribute('aria-checked');
				expect({ [property.name]: checked }).toEqual({ [property.name]: String(value) });
			} else if (property.type === 'string' || property.type === 'number') {
				const field = input.locator('input, textarea').first();
				const shownValue = await field.inputValue();
				if (property.type === 'number') expect({ [property.name]: Number(shownValue) }).toEqual({ [property.name]: value });
				else if (!property.typeOptions?.password) expect({ [property.name]: shownValue }).toEqual({ [property.name]: value });
				if (property.placeholder) {
					expect({ [property.name]: await field.getAttribute('placeholder') }).toEqual({ [property.name]: property.placeholder });
				}
			}
			if (property.hint) await expectText(editor.parameters, plain(property.hint));
		}
	};

	for (const { description, shots } of CASES) {
		for (const shot of shots) {
			it(`${description.displayName}: found in the node panel, added with "${shot.action}", its parameters as described (${shot.file}.png)`, async () => {
				await step(shot.file, async () => {
					const properties = description.properties as Property[];
					const { values, shown: visible } = shownProperties(properties, shot.values);
					const isTrigger = description.displayName.endsWith(' Trigger');
					await onCanvas();

					// The node panel: searched by name, listed with our description and icon.
					await editor.searchNodes(description.displayName);
					// n8n lists a trigger under its app's name, without " Trigger".
					const entry = editor.nodeEntry([description.displayName, description.displayName.replace(/ Trigger$/, '')]);
					await entry.first().waitFor();
					expect(await entry.count()).toBe(1);
					const listedName = tidy(await entry.getByTestId('node-creator-item-name').innerText());
					expect(await editor.listedNames()).toContain(listedName);
					// Where the list shows descriptions (2.x does), ours.
					const listedDescription = entry.getByTestId('node-creator-item-description');
					if ((await listedDescription.count()) > 0) expect(tidy(await listedDescription.innerText())).toBe(description.description);
					const listedIcon = entry.locator(`img[src*="/icons/${PACKAGE}/"]`);
					expect(await editor.imagesLoaded(listedIcon)).toBe(true);
					expect(await listedIcon.first().getAttribute('src')).toMatch(new RegExp(`/${iconFile(description).replace('.', '\\.')}$`));

					// Its actions (or trigger events), then the node's details.
					await entry.first().click();
					expect(await editor.actionTexts()).toContain(shot.action);
					await editor.pickAction(shot.action);
					// The node is named after the node, or after the action (1.x names Account nodes so).
					const title = tidy(await editor.ndv.getByTestId('node-title-container').or(editor.ndv.getByTestId('inline-edit-preview')).first().innerText());
					expect([description.displayName, shot.action]).toContain(title.replace(/\d+$/, ''));
					expect(await editor.imagesLoaded(editor.ndv.locator(`img[src*="/icons/${PACKAGE}/"]`))).toBe(true);

					// The credential: the saved one is chosen, and the list names the type.
					if (isTrigger) {
						expect(await editor.parameters.getByTestId('credentials-label').count()).toBe(0);
					} else {
						await checkCredential();
					}

					// The parameters, in order, with their defaults; the notices.
					const labels = visible.filter((property) => !['notice', 'hidden'].includes(property.type)).map((property) => property.displayName);
					await eventually(async () => expect(await editor.topLevelLabels()).toEqual(labels));
					for (const notice of visible.filter((property) => property.type === 'notice')) {
						await expectText(editor.parameters, plain(notice.displayName));
					}
					await checkFields(visible, values);

					// The model list, from the service through the credential.
					if (shot.modality) {
						await editor.input('model').getByTestId('rlc-input').click();
						const items = page.getByTestId('rlc-item');
						await items.first().waitFor();
						const texts = (await items.allInnerTexts()).map(tidy);
						const ids = MODELS.filter((model) => model.modality === shot.modality).map((model) => model.id);
						expect(texts).toHaveLength(ids.length);
						for (const id of ids) expect(texts.some((text) => text.includes(`(${id})`))).toBe(true);
						await editor.fitParameters();
						await editor.parametersColumn.screenshot({ path: join(folder, `${shot.file}-models.png`) });
						await items.first().click();
						await eventually(async () => expect(tidy(await editor.input('model').getByTestId('rlc-input').inputValue())).toBe(texts[0]));
					}

					// Every item of every collection, each with its default, placeholder and hint.
					for (const collection of visible.filter((property) => property.type === 'collection')) {
						const offered = (collection.options as Property[]).filter((option) => shown(option, values));
						const added = await editor.addAllOf(collection.placeholder!);
						expect(added.length).toBe(offered.length);
						if (!added.includes('')) expect([...added].sort()).toEqual(offered.map((option) => option.displayName).sort());
						const allLabels = await editor.allLabels();
						for (const option of offered) expect(allLabels).toContain(option.displayName);
						await checkFields(offered);
						// A dropdown whose entries come from the service lists them.
						for (const option of offered.filter((entry) => entry.typeOptions?.loadOptionsMethod)) {
							const choices = await editor.openDropdown(editor.input(option.name).locator('input').first());
							expect(await choices.count()).toBeGreaterThan(0);
							await choices.first().click();
						}
					}

					await editor.fitParameters();
					// No hover or focus controls in the picture.
					await page.mouse.move(0, 0);
					await page.evaluate(() => (globalThis as any).document.activeElement?.blur?.());
					await editor.parametersColumn.screenshot({ path: join(folder, `${shot.file}.png`) });
					await editor.closeNdv();
					await page.setViewportSize({ width: 1440, height: 1000 });

					expect(failedResponses).toEqual([]);
					expect(pageErrors).toEqual([]);
				});
			});
		}
	}

	/** The credential selector shows the saved credential and offers the type by its name; once per line, its dialog too. */
	const checkCredential = async () => {
		const label = tidy(await editor.parameters.getByTestId('credentials-label').innerText());
		expect(['Credential to connect with', 'Credential']).toContain(label);
		const select = editor.parameters.getByTestId('node-credentials-select');
		expect(await select.locator('input').first().inputValue()).toBe(n8n.EXAMPLE_CREDENTIAL_NAME);
		if (credentialChecked) return;
		credentialChecked = true;

		const choices = await editor.openDropdown(select.locator('input').first());
		const saved = choices.filter({ hasText: n8n.EXAMPLE_CREDENTIAL_NAME });
		expect(await saved.count()).toBe(1);
		// Each saved credential is listed with its type's name under it.
		expect(tidy(await saved.innerText())).toBe(`${n8n.EXAMPLE_CREDENTIAL_NAME} ${CREDENTIAL_TYPE}`);
		await saved.click();

		// The pencil opens the credential: n8n tests it against the sandbox when it opens.
		await editor.parameters.getByTestId('credential-edit-button').click();
		const dialog = page.getByTestId('editCredential-modal');
		await dialog.waitFor();
		await expectText(dialog, CREDENTIAL_TYPE);
		await page.getByTestId('credentials-config-container-test-success').waitFor({ timeout: 60_000 });
		for (const field of ['API Key', 'Base URL']) await expectText(dialog, field);
		await dialog.screenshot({ path: join(folder, 'credential.png') });
		await dialog.locator('.el-dialog__headerbtn').first().click();
		await dialog.waitFor({ state: 'hidden' });
		await editor.ndv.waitFor();
	};

	it('left no error about the package in the n8n log', () => {
		expect(instance.logs()).not.toMatch(/n8n-nodes-generation-service[^\n]*(error|failed)/i);
		expect(instance.exited()).toBeNull();
	});
});
