import type {
	IExecuteFunctions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
} from 'n8n-workflow';

import { modalityNodeBase, operationSubtitle } from '../shared/description';
import type { ModalityDefinition } from '../shared/fields';
import { durationField, enumField, httpUrl, webhookUrlField } from '../shared/fields';
import { executeGeneration } from '../shared/generation';
import { modelSearch } from '../shared/models';

/** §4.2 POST /v1/generations/video: an asynchronous job (§3). */
export const video: ModalityDefinition = {
	modality: 'video',
	noun: 'video',
	endpoint: '/v1/generations/video',
	jobs: true,
	defaultMimeType: 'video/mp4',
	modelExample: 'kling-2.1',
	prompt: {
		displayName: 'Prompt',
		description: 'What happens in the video',
		placeholder: 'e.g. A paper boat drifting down a rainy street, slow motion',
	},
	fields: [
		{
			body: 'image',
			parse: httpUrl,
			property: {
				displayName: 'Source Image URL',
				name: 'image',
				type: 'string',
				default: '',
				placeholder: 'e.g. https://example.com/first-frame.png',
				description: 'URL of an image to animate, for image-to-video models',
			},
		},
		durationField('Length of the video. Depends on the model, typically 3 to 10 seconds.', 5),
		enumField('aspectRatio', 'Aspect Ratio', 'aspect_ratio', ['16:9', '9:16', '1:1'], 'Shape of the video. Without it the model chooses.'),
		enumField('resolution', 'Resolution', 'resolution', ['720p', '1080p'], 'The service uses 720p when this is not set'),
		webhookUrlField,
	],
};

export class GenerationServiceVideo implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Generation Service Video',
		name: 'generationServiceVideo',
		icon: { light: 'file:../../icons/video.svg', dark: 'file:../../icons/video.dark.svg' },
		description: 'Generate videos with the Generation Service',
		subtitle: operationSubtitle(video),
		usableAsTool: true,
		...modalityNodeBase(video, 'Generation Service Video'),
	};

	methods = { listSearch: { searchModels: modelSearch('video') } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return [await executeGeneration(this, video, this.continueOnFail())];
	}
}
