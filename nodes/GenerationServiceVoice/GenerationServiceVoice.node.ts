import type {
	IDataObject,
	IExecuteFunctions,
	ILoadOptionsFunctions,
	INodeExecutionData,
	INodePropertyOptions,
	INodeType,
	INodeTypeDescription,
} from 'n8n-workflow';

import { modalityNodeBase, operationSubtitle } from '../shared/description';
import type { ModalityDefinition } from '../shared/fields';
import { enumField, httpUrl, numberBetween, text } from '../shared/fields';
import { executeGeneration } from '../shared/generation';
import { modelSearch } from '../shared/models';
import { ServiceClient } from '../shared/transport';

/** §4.7 GET /v1/voices: an array of presets (§2.6). */
async function listVoices(client: ServiceClient, itemIndex?: number): Promise<IDataObject[]> {
	const voices = await client.request<unknown>({ method: 'GET', path: '/v1/voices' }, itemIndex);
	return (Array.isArray(voices) ? voices : []) as IDataObject[];
}

/**
 * §4.4 POST /v1/generations/voice. Short text is answered at once; long text comes back as a job
 * and is waited for like a video.
 */
export const voice: ModalityDefinition = {
	modality: 'voice',
	noun: 'speech clip',
	endpoint: '/v1/generations/voice',
	jobs: true,
	defaultMimeType: 'audio/mpeg',
	notice:
		'Speech results give their cost as credits_used and estimated_credits. Despite the names, these are microdollars, not credits: 1,000,000 = 1 USD.',
	modelExample: 'eleven-turbo',
	prompt: {
		displayName: 'Text',
		description: 'The text to speak. Long text is generated as a job and waited for.',
		placeholder: 'e.g. Welcome to our weekly update.',
	},
	fields: [
		{
			body: 'voice',
			parse: text,
			property: {
				displayName: 'Voice Name or ID',
				name: 'voice',
				type: 'options',
				typeOptions: { loadOptionsMethod: 'getVoices' },
				default: '',
				description:
					'The voice preset. Choose from the list, or specify an ID using an <a href="https://docs.n8n.io/code/expressions/">expression</a>.',
			},
		},
		{
			body: 'speed',
			parse: numberBetween(0.5, 2),
			property: {
				displayName: 'Speed',
				name: 'speed',
				type: 'number',
				typeOptions: { minValue: 0.5, maxValue: 2, numberPrecision: 2 },
				default: 1,
				description: 'Speaking rate, from 0.5 (half speed) to 2.0 (double speed)',
			},
		},
		{
			body: 'ref_audio_url',
			parse: httpUrl,
			property: {
				displayName: 'Reference Audio URL',
				name: 'refAudioUrl',
				type: 'string',
				default: '',
				placeholder: 'e.g. https://example.com/my-voice.mp3',
				description: 'A recording of the voice to clone, for models that support cloning',
				hint: 'Use a clear sample of 10 to 30 seconds with little background noise',
			},
		},
		enumField(
			'emotion',
			'Emotion',
			'emotion',
			['neutral', 'happy', 'sad', 'excited'],
			'The tone of the speech. Not every model supports it.',
			'neutral',
			(value) => value.charAt(0).toUpperCase() + value.slice(1),
		),
	],
	extraOperations: [
		{
			option: {
				name: 'List Voices',
				value: 'listVoices',
				action: 'List voice presets',
				description: 'Get the voice presets, one item per voice',
			},
			execute: listVoices,
		},
	],
};

export class GenerationServiceVoice implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Generation Service Voice',
		name: 'generationServiceVoice',
		icon: { light: 'file:../../icons/voice.svg', dark: 'file:../../icons/voice.dark.svg' },
		description: 'Turn text into speech, or clone a voice, with the Generation Service',
		subtitle: operationSubtitle(voice),
		usableAsTool: true,
		...modalityNodeBase(voice, 'Generation Service Voice'),
	};

	methods = {
		listSearch: { searchModels: modelSearch('voice') },
		loadOptions: {
			async getVoices(this: ILoadOptionsFunctions): Promise<INodePropertyOptions[]> {
				const voices = await listVoices(new ServiceClient(this));
				return voices.map((preset) => ({
					name: [preset.language, preset.gender].some(Boolean)
						? `${String(preset.name)} (${[preset.language, preset.gender].filter(Boolean).join(', ')})`
						: String(preset.name),
					value: String(preset.name),
				}));
			},
		},
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return [await executeGeneration(this, voice, this.continueOnFail())];
	}
}
