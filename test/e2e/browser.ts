/**
 * The n8n editor driven in Debian's Chromium by playwright-core (never a downloaded browser), for
 * test/e2e/editor.e2e.ts. The helpers work on both n8n lines: they use the data-test-id attributes
 * that 1.123.x and 2.40.x share, and fall back where the two differ.
 *
 * Selectors (seen in both lines unless noted):
 *   sign-in form       input[name=emailOrLdapLoginId], input[name=password], form-submit-button
 *   canvas             canvas-add-button (empty canvas), node-creator-plus-button (always), canvas-node
 *   node panel         node-creator, node-creator-search-bar, item-iterator-item,
 *                      node-creator-item-name, node-creator-item-description, node-creator-no-results
 *   node details       ndv, node-parameters, parameter-item, input-label, parameter-input-<name>,
 *                      credentials-label, node-credentials-select, credential-edit-button,
 *                      rlc-input + rlc-item (resource locator list), tab-params;
 *                      closed by Escape, or back-to-canvas (1.x) / ndv-close-button (2.x)
 *   collections        input[placeholder="Add Field"|"Add Option"|...] (an Element Plus select; 2.x
 *                      also marks it collection-parameter-add), or a plain button of that name when
 *                      the collection has one option; its list items are .el-select-dropdown__item
 *   credential modal   credential-edit-dialog, credentials-config-container-test-success
 */
import { existsSync } from 'node:fs';

import { chromium, selectors } from 'playwright-core';
import type { Browser, Locator, Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/** Without the background-networking flags Chromium keeps calling Google hosts, which a closed network refuses. */
export const CHROMIUM_ARGS = [
	'--no-sandbox',
	'--disable-gpu',
	'--disable-quic',
	'--no-first-run',
	'--disable-background-networking',
	'--disable-component-update',
	'--disable-sync',
];

let testIdsSet = false;

/** Launches Debian's Chromium, headless. n8n's editor marks its elements with data-test-id. */
export async function launchChromium(): Promise<Browser> {
	if (!existsSync(CHROMIUM)) {
		throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium), as .ci/run does`);
	}
	if (!testIdsSet) {
		selectors.setTestIdAttribute('data-test-id');
		testIdsSet = true;
	}
	return await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A label as the editor shows it: whitespace collapsed, a required marker dropped. */
export const tidy = (text: string) => text.replace(/\s+/g, ' ').replace(/\s*\*$/, '').trim();

/** What a person sees of a text with HTML in it (notices): tags dropped, entities decoded. */
export const plain = (html: string) =>
	tidy(html.replace(/<[^>]+>/g, '').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&amp;/g, '&'));

export class Editor {
	constructor(
		readonly page: Page,
		readonly baseUrl: string,
	) {}

	/** Signs in through the editor's own sign-in form. */
	async signIn(email: string, password: string): Promise<void> {
		const { page } = this;
		await page.goto(`${this.baseUrl}/signin`, { waitUntil: 'domcontentloaded' });
		await page.locator('input[name="emailOrLdapLoginId"]').fill(email);
		await page.locator('input[name="password"]').fill(password);
		await page.getByTestId('form-submit-button').click();
		await page.waitForURL((url) => !url.pathname.startsWith('/signin'), { timeout: 60_000 });
	}

	/** Opens a new, empty workflow and waits for its canvas. */
	async newWorkflow(): Promise<void> {
		await this.page.goto(`${this.baseUrl}/workflow/new`, { waitUntil: 'domcontentloaded' });
		await this.page.getByTestId('node-creator-plus-button').waitFor({ timeout: 120_000 });
		await this.dismissModals();
	}

	/** Closes first-run dialogs (personalization survey, what's new...) if any shows up. */
	async dismissModals(): Promise<void> {
		const close = this.page.locator(
			'.el-dialog:visible .el-dialog__headerbtn, .el-overlay-dialog:visible [aria-label="Close"], [role="dialog"]:visible [aria-label="Close"]',
		);
		for (let attempt = 0; attempt < 3 && (await close.count()) > 0; attempt++) {
			await close.first().click();
			await sleep(300);
		}
	}

	get nodeCreator(): Locator {
		return this.page.getByTestId('node-creator');
	}

	/** Opens the node panel with the canvas's "+" and types into its search. */
	async searchNodes(term: string): Promise<void> {
		const { page } = this;
		await page.getByTestId('node-creator-plus-button').click();
		const search = page.getByTestId('node-creator-search-bar');
		await search.waitFor();
		await search.fill(term);
	}

	/** The names listed in the node panel once it has settled. */
	async listedNames(): Promise<string[]> {
		const names = this.nodeCreator.getByTestId('node-creator-item-name');
		await names.first().waitFor();
		return (await names.allInnerTexts()).map(tidy);
	}

	/** The node panel's entries named one of these names, exactly. */
	nodeEntry(names: string[]): Locator {
		const name = new RegExp(`^\\s*(${names.map(escapeRegExp).join('|')})\\s*$`);
		return this.nodeCreator
			.getByTestId('item-iterator-item')
			.filter({ has: this.page.getByTestId('node-creator-item-name').filter({ hasText: name }) });
	}

	/** Back to the bare canvas: closes the node details and the node panel a failed step left open. */
	async backToCanvas(): Promise<void> {
		const { page } = this;
		if (await this.ndv.isVisible()) await this.closeNdv();
		for (let attempt = 0; attempt < 3 && (await this.nodeCreator.isVisible()); attempt++) {
			await page.keyboard.press('Escape');
			await sleep(500);
		}
		if (await this.nodeCreator.isVisible()) await this.newWorkflow();
	}

	/** The entries of the node panel after a node was picked: its actions (or triggers). */
	async actionTexts(): Promise<string[]> {
		const items = this.nodeCreator.getByTestId('item-iterator-item');
		await items.first().waitFor();
		return (await items.allInnerTexts()).map(tidy);
	}

	async pickAction(text: string): Promise<void> {
		await this.nodeCreator
			.getByTestId('item-iterator-item')
			.filter({ hasText: new RegExp(`^\\s*${escapeRegExp(text)}\\s*$`) })
			.first()
			.click();
		await this.ndv.waitFor({ timeout: 60_000 });
		await this.parameters.waitFor();
	}

	get ndv(): Locator {
		return this.page.getByTestId('ndv');
	}

	get parameters(): Locator {
		return this.ndv.getByTestId('node-parameters');
	}

	/** The column with the Parameters tab and the parameters: the innermost element holding both. */
	get parametersColumn(): Locator {
		return this.ndv
			.locator('div')
			.filter({ has: this.page.getByTestId('tab-params') })
			.filter({ has: this.page.getByTestId('node-parameters') })
			.last();
	}

	async closeNdv(): Promise<void> {
		const { page } = this;
		await page.keyboard.press('Escape');
		try {
			await this.ndv.waitFor({ state: 'hidden', timeout: 5_000 });
		} catch {
			const button = page.locator('[data-test-id="ndv-close-button"], [data-test-id="back-to-canvas"]');
			await button.first().click();
			await this.ndv.waitFor({ state: 'hidden' });
		}
	}

	/** The labels of the parameters shown at the top level of the node's parameters, in order. */
	async topLevelLabels(): Promise<string[]> {
		return await this.labels(true);
	}

	/** Every parameter label shown, nested ones included. */
	async allLabels(): Promise<string[]> {
		return await this.labels(false);
	}

	/** The visible labels' titles (a label also holds the Fixed / Expression switch, shown on hover). */
	private async labels(topLevelOnly: boolean): Promise<string[]> {
		const labels = await this.parameters.getByTestId('input-label').evaluateAll(
			(elements: any[], topLevel: boolean) =>
				elements
					.filter((element) => element.getClientRects().length > 0)
					.filter((element) => !topLevel || !element.closest('.collection-parameter, [class*="collectionParameter"]'))
					.map((element) => {
						const title = element.querySelector('label [class*="title"]') ?? element.querySelector('label') ?? element;
						return String(title.innerText ?? '');
					}),
			topLevelOnly,
		);
		return labels.map(tidy);
	}

	/** The input of a parameter, by its name. */
	input(name: string): Locator {
		return this.parameters.getByTestId(`parameter-input-${name}`);
	}

	/**
	 * Adds every item of a collection ("Additional Fields", "Options", "Filters") through its
	 * "Add ..." control, one after the other, and returns their names in the order offered.
	 */
	async addAllOf(placeholder: string): Promise<string[]> {
		const added: string[] = [];
		for (let round = 0; round < 30; round++) {
			const select = this.parameters.locator(`input[placeholder="${placeholder}"]`);
			const button = this.parameters.getByRole('button', { name: placeholder, exact: true });
			const before = (await this.allLabels()).length;
			if ((await select.count()) > 0) {
				const item = (await this.openDropdown(select.first())).first();
				added.push(tidy(await item.innerText()));
				await item.click();
			} else if ((await button.count()) > 0) {
				await button.first().click();
				added.push('');
			} else {
				break;
			}
			// Each item added shows one more label.
			const deadline = Date.now() + 10_000;
			while ((await this.allLabels()).length <= before) {
				if (Date.now() > deadline) throw new Error(`Adding an item with "${placeholder}" showed no new field`);
				await sleep(100);
			}
		}
		return added;
	}

	/**
	 * Opens an Element Plus select by its input and returns the items of its own list (found by
	 * the input's aria-controls: another list may still be fading out).
	 */
	async openDropdown(input: Locator): Promise<Locator> {
		await input.click();
		const list = await input.getAttribute('aria-controls');
		const items = list
			? this.page.locator(`[id="${list}"] .el-select-dropdown__item`)
			: this.page.locator('.el-select-dropdown__item:visible');
		await items.first().waitFor();
		return items;
	}

	/**
	 * Makes the window tall enough that the parameters need no scrolling, so one screenshot
	 * shows them all (the details view takes the window's height).
	 */
	async fitParameters(): Promise<void> {
		const { page } = this;
		for (let attempt = 0; attempt < 4; attempt++) {
			const overflow = await this.parameters.evaluate((element: any) => {
				let hidden = 0;
				for (let node = element; node && node !== element.ownerDocument.body; node = node.parentElement) {
					hidden = Math.max(hidden, node.scrollHeight - node.clientHeight);
				}
				return hidden;
			});
			if (overflow <= 2) return;
			const size = page.viewportSize() ?? { width: 1440, height: 1000 };
			await page.setViewportSize({ width: size.width, height: size.height + overflow + 40 });
			await sleep(400);
		}
	}

	/** Whether every image of a locator has loaded (a broken icon has no natural size). */
	async imagesLoaded(images: Locator): Promise<boolean> {
		await images.first().waitFor();
		const sizes = await images.evaluateAll((elements: any[]) =>
			elements.map((image) => (image.complete ? image.naturalWidth : -1)),
		);
		return sizes.length > 0 && sizes.every((width) => width > 0);
	}
}

/**
 * Retries an assertion until it passes (the editor renders a moment after each action), then
 * throws its last failure.
 */
export async function eventually<T>(assertion: () => Promise<T>, timeoutMs = 15_000): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		try {
			return await assertion();
		} catch (error) {
			if (Date.now() > deadline) throw error;
			await sleep(250);
		}
	}
}

/** Waits until the text a person sees in an element includes `text` (whitespace collapsed). */
export async function expectText(locator: Locator, text: string, timeoutMs = 15_000): Promise<void> {
	const wanted = tidy(text);
	const deadline = Date.now() + timeoutMs;
	let seen = '';
	for (;;) {
		seen = tidy(await locator.first().innerText().catch(() => ''));
		if (seen.includes(wanted)) return;
		if (Date.now() > deadline) throw new Error(`Expected the editor to show "${wanted}", it shows: "${seen.slice(0, 2000)}"`);
		await sleep(250);
	}
}

function escapeRegExp(text: string): string {
	return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// ---------- what the editor should show for a node: from its own description ----------

/** The part of a parameter description the editor uses. */
export interface Property {
	displayName: string;
	name: string;
	type: string;
	default?: unknown;
	placeholder?: string;
	hint?: string;
	options?: Array<Property | { name: string; value: unknown }>;
	typeOptions?: Record<string, unknown>;
	displayOptions?: { show?: Record<string, unknown[] | undefined>; hide?: Record<string, unknown[] | undefined> };
}

function matches(values: Record<string, unknown>, key: string, allowed: unknown[] | undefined): boolean {
	const value = values[key.replace(/^\//, '')];
	return (allowed ?? []).some((entry) => (Array.isArray(value) ? value.includes(entry) : value === entry));
}

/** Whether n8n shows a parameter for these values (its displayOptions; "/name" is a root parameter). */
export function shown(property: Property, values: Record<string, unknown>): boolean {
	const { show, hide } = property.displayOptions ?? {};
	if (show && !Object.entries(show).every(([key, allowed]) => matches(values, key, allowed))) return false;
	if (hide && Object.entries(hide).some(([key, allowed]) => matches(values, key, allowed))) return false;
	return true;
}

/**
 * The parameters n8n shows at the top level for an action's values (e.g. { resource, operation }),
 * each other parameter at its default, in order.
 */
export function shownProperties(properties: Property[], chosen: Record<string, unknown>): { values: Record<string, unknown>; shown: Property[] } {
	const values: Record<string, unknown> = { ...chosen };
	const visible: Property[] = [];
	for (const property of properties) {
		if (!shown(property, values)) continue;
		visible.push(property);
		if (!(property.name in values)) values[property.name] = property.default;
	}
	return { values, shown: visible };
}
