import { defineRoute } from '../http/define-route.ts';
import { ImagePath } from '../images/image.schemas.ts';
import { ClassMismatch, ImagePredictBody, ImagePredicted } from './image-predict.schemas.ts';

export const predictImage = defineRoute({
  method: 'POST',
  path: '/api/images/:imageId/predict',
  tag: 'Images',
  summary: "Auto-annotate an image: a model's predictions as labels of its dataset, without saving them",
  description:
    "Runs a model of this appliance (its ONNX export, made when it got weights) on the image and converts the predictions to the dataset's " +
    'label format: bbox [cx, cy, w, h], segments, keypoints and obb corners, normalized 0-1 and rounded to 5 decimals, valid for PATCH /api/images/{imageId}. ' +
    'Tasks: a detect dataset takes any model with boxes (an obb box becomes its enclosing box); a segment dataset takes segment models, and detect or obb ' +
    'models as rectangle polygons; an obb dataset takes obb models, and detect or segment boxes as upright rectangles; pose, classify and semantic ' +
    '(segment models) need their own task; others are 422. Depth datasets are 400; images with more than 3 channels, and images of a dataset backed by connected storage, 409. ' +
    'Hosted class-prompted and paid provider models are not available on this on-premise appliance: 422 (code missing_provider_api_key for provider models). ' +
    'Needs view access to the image and the model.',
  auth: 'key',
  limit: 'default',
  request: { params: ImagePath, body: ImagePredictBody },
  documentBody: true,
  response: { status: 200, description: 'The predictions as labels, with their confidences', schema: ImagePredicted },
  errors: [400, 404, 409, 422, 503],
  errorBodies: { 422: ClassMismatch },
  handler: (ctx, { params, body }) => ctx.state.services.imagePredict.predict(ctx.state.actor, params.imageId, body),
});

export const imagePredictRoutes = [predictImage];
