import type {
	IExecuteFunctions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
} from 'n8n-workflow';

import { modalityNodeBase, operationSubtitle } from '../shared/description';
import type { ModalityDefinition, Parsed } from '../shared/fields';
import { enumField, httpUrl, integer, text } from '../shared/fields';
import { executeGeneration } from '../shared/generation';
import { modelSearch } from '../shared/models';

/** §4.1 `image_size`: `<width>x<height>`, each a positive whole number of pixels. */
const imageSize = (value: unknown): Parsed =>
	typeof value === 'string' && /^[1-9]\d{0,4}x[1-9]\d{0,4}$/.test(value.trim())
		? { ok: true, value: value.trim() }
		: { ok: false, allowed: 'width x height in pixels, such as 1024x768' };

/** §4.1 POST /v1/generations/image. */
export const image: ModalityDefinition = {
	modality: 'image',
	noun: 'image',
	endpoint: '/v1/generations/image',
	jobs: false,
	defaultMimeType: 'image/png',
	modelExample: 'flux-schnell',
	prompt: {
		displayName: 'Prompt',
		description: 'What the image should show',
		placeholder: 'e.g. A lighthouse on a cliff at dawn, watercolor',
	},
	fields: [
		{
			body: 'negative_prompt',
			parse: text,
			property: {
				displayName: 'Negative Prompt',
				name: 'negativePrompt',
				type: 'string',
				typeOptions: { rows: 2 },
				default: '',
				description: 'What the image should not contain',
			},
		},
		enumField(
			'aspectRatio',
			'Aspect Ratio',
			'aspect_ratio',
			['1:1', '16:9', '9:16', '4:3', '3:4'],
			'Shape of the image. Ignored when Image Size is set.',
		),
		{
			body: 'image_size',
			parse: imageSize,
			property: {
				displayName: 'Image Size',
				name: 'imageSize',
				type: 'string',
				default: '',
				placeholder: 'e.g. 1024x768',
				description: 'Exact size as width x height in pixels. Overrides Aspect Ratio.',
			},
		},
		{
			body: 'seed',
			parse: integer,
			property: {
				displayName: 'Seed',
				name: 'seed',
				type: 'number',
				typeOptions: { numberPrecision: 0 },
				default: 0,
				description: 'A whole number that makes the output reproducible: the same seed and prompt give the same image',
			},
		},
		{
			body: 'image',
			parse: httpUrl,
			property: {
				displayName: 'Source Image URL',
				name: 'image',
				type: 'string',
				default: '',
				placeholder: 'e.g. https://example.com/photo.png',
				description: 'URL of an image to edit, for models that support editing',
			},
		},
	],
};

export class GenerationServiceImage implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Generation Service Image',
		name: 'generationServiceImage',
		icon: { light: 'file:../../icons/image.svg', dark: 'file:../../icons/image.dark.svg' },
		description: 'Generate images with the Generation Service',
		subtitle: operationSubtitle(image),
		usableAsTool: true,
		...modalityNodeBase(image, 'Generation Service Image'),
	};

	methods = { listSearch: { searchModels: modelSearch('image') } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return [await executeGeneration(this, image, this.continueOnFail())];
	}
}
