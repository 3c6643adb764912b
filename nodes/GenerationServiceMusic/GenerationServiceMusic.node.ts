import type {
	IExecuteFunctions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
} from 'n8n-workflow';

import { modalityNodeBase, operationSubtitle } from '../shared/description';
import type { ModalityDefinition } from '../shared/fields';
import { boolean, durationField, text, webhookUrlField } from '../shared/fields';
import { executeGeneration } from '../shared/generation';
import { modelSearch } from '../shared/models';

/** §4.3 POST /v1/generations/music: an asynchronous job (§3). */
export const music: ModalityDefinition = {
	modality: 'music',
	noun: 'music track',
	endpoint: '/v1/generations/music',
	jobs: true,
	defaultMimeType: 'audio/mpeg',
	modelExample: 'suno-v4',
	prompt: {
		displayName: 'Prompt or Lyrics',
		description:
			'A description of the track, or its lyrics. Section markers such as [Verse] and [Chorus] on their own lines shape the song.',
		placeholder: 'e.g. [Verse] City lights are calling… [Chorus] We run until the morning',
	},
	fields: [
		{
			body: 'genre',
			parse: text,
			property: {
				displayName: 'Genre',
				name: 'genre',
				type: 'string',
				default: '',
				placeholder: 'e.g. synthwave',
				description: 'A genre tag for the track',
			},
		},
		durationField('Length of the track. The maximum depends on the model, from 60 to 480 seconds.', 120),
		{
			body: 'instrumental',
			parse: boolean,
			property: {
				displayName: 'Instrumental',
				name: 'instrumental',
				type: 'boolean',
				default: false,
				description: 'Whether the track has no vocals',
			},
		},
		webhookUrlField,
	],
};

export class GenerationServiceMusic implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Generation Service Music',
		name: 'generationServiceMusic',
		icon: { light: 'file:../../icons/music.svg', dark: 'file:../../icons/music.dark.svg' },
		description: 'Generate music with the Generation Service',
		subtitle: operationSubtitle(music),
		usableAsTool: true,
		...modalityNodeBase(music, 'Generation Service Music'),
	};

	methods = { listSearch: { searchModels: modelSearch('music') } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return [await executeGeneration(this, music, this.continueOnFail())];
	}
}
