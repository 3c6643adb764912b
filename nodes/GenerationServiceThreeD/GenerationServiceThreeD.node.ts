import type {
	IExecuteFunctions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
} from 'n8n-workflow';

import { modalityNodeBase, operationSubtitle } from '../shared/description';
import type { ModalityDefinition } from '../shared/fields';
import { executeGeneration } from '../shared/generation';
import { modelSearch } from '../shared/models';

/**
 * §4.5 POST /v1/generations/threeD. Only `model` and `prompt` are specified; every other field
 * (a source image, formats, quality) goes through Model Parameters as the model documents it.
 */
export const threeD: ModalityDefinition = {
	modality: 'threeD',
	noun: '3D model',
	endpoint: '/v1/generations/threeD',
	jobs: true,
	defaultMimeType: 'model/gltf-binary',
	modelExample: 'trellis',
	prompt: {
		displayName: 'Prompt',
		description: 'The object to model. Typical generation time is 15 to 60 seconds.',
		placeholder: 'e.g. A low-poly wooden treasure chest',
	},
	fields: [],
};

export class GenerationServiceThreeD implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Generation Service 3D',
		name: 'generationServiceThreeD',
		icon: { light: 'file:../../icons/threeD.svg', dark: 'file:../../icons/threeD.dark.svg' },
		description: 'Generate 3D models (GLB) with the Generation Service',
		subtitle: operationSubtitle(threeD),
		usableAsTool: true,
		...modalityNodeBase(threeD, 'Generation Service 3D'),
	};

	methods = { listSearch: { searchModels: modelSearch('threeD') } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return [await executeGeneration(this, threeD, this.continueOnFail())];
	}
}
