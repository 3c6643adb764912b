import type { ILoadOptionsFunctions, INodeListSearchItems, INodeListSearchResult } from 'n8n-workflow';

import type { Modality } from './fields';
import { ServiceClient } from './transport';

type Model = Record<string, unknown>;

/** §4.15 names GET /v1/models but not its shape: accept a bare array or one wrapped in a common key. */
function modelsOf(response: unknown): Model[] {
	const list = Array.isArray(response)
		? response
		: ['models', 'data', 'items', 'results']
				.map((key) => (response as Record<string, unknown> | undefined)?.[key])
				.find(Array.isArray);
	return ((list as unknown[]) ?? []).map((entry) =>
		typeof entry === 'string' ? { id: entry } : ((entry ?? {}) as Model),
	);
}

function idOf(model: Model): string | undefined {
	const id = model.id ?? model.key ?? model.model ?? model.name;
	return typeof id === 'string' || typeof id === 'number' ? String(id) : undefined;
}

/** A model with no modality information is offered everywhere rather than hidden. */
function servesModality(model: Model, modality: Modality): boolean {
	const declared = [model.modality, model.type, model.modalities, model.category].flat();
	const known = declared.filter((value): value is string => typeof value === 'string');
	if (known.length === 0) return true;
	const wanted = modality === 'threeD' ? ['threed', '3d'] : [modality];
	return known.some((value) => wanted.includes(value.toLowerCase()));
}

function priceOf(model: Model): string | undefined {
	const pricing = model.pricing as Record<string, unknown> | undefined;
	if (!pricing || typeof pricing !== 'object') return undefined;
	const display = pricing.display ?? pricing.price;
	if (typeof display !== 'string' && typeof display !== 'number') return undefined;
	return typeof pricing.unit === 'string' ? `${display} per ${pricing.unit}` : String(display);
}

export function modelSearch(modality: Modality) {
	return async function searchModels(
		this: ILoadOptionsFunctions,
		filter?: string,
	): Promise<INodeListSearchResult> {
		const response = await new ServiceClient(this).request<unknown>({ method: 'GET', path: '/v1/models' });
		const needle = filter?.trim().toLowerCase() ?? '';
		const results: INodeListSearchItems[] = [];
		for (const model of modelsOf(response)) {
			const id = idOf(model);
			if (!id || !servesModality(model, modality)) continue;
			const label = typeof model.name === 'string' && model.name !== id ? `${model.name} (${id})` : id;
			if (needle && !label.toLowerCase().includes(needle)) continue;
			const price = priceOf(model);
			results.push({ name: price ? `${label} · ${price}` : label, value: id });
		}
		return { results };
	};
}
