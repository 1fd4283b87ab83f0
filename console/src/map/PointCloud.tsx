import { useEffect, useMemo, useRef, useState, type KeyboardEvent, type PointerEvent } from 'react';
import {
  boundsOf,
  pan,
  pointsInPolygon,
  toView,
  unzoom,
  WHOLE_MAP,
  zoomAt,
  MAX_ZOOM,
  type Bounds,
  type Zoom,
} from './projection.ts';
import type { Layout } from './queries.ts';

const VERTEX = `
attribute vec2 position;
attribute vec4 color;
uniform float size;
uniform vec3 zoom;
varying vec4 tint;
void main() {
  vec2 place = (position - zoom.yz) * zoom.x + vec2(0.5);
  gl_Position = vec4(place.x * 2.0 - 1.0, 1.0 - place.y * 2.0, 0.0, 1.0);
  gl_PointSize = size;
  tint = color;
}`;
const FRAGMENT = `
precision mediump float;
varying vec4 tint;
void main() {
  vec2 offset = gl_PointCoord - vec2(0.5);
  if (dot(offset, offset) > 0.25) discard;
  gl_FragColor = tint;
}`;

const ZOOM_STEP = 1.5;
const PAN_STEP = 0.1;

/** Draws the points at a zoom; made once per layout and colouring (the points go to the GPU once). */
interface Renderer {
  draw(zoom: Zoom, size: number): void;
  /** Frees what it holds on the GPU: a renderer is made again whenever the colours change (a lasso, colour by). */
  dispose(): void;
}

/**
 * The layout drawn with WebGL (one draw call for every point; into the canvas's pixels without a GPU), zoomed by the
 * wheel, the buttons or + − 0 and panned by the arrow keys, and a lasso: drag around points to pick every one inside.
 */
export function PointCloud({
  layout,
  colors,
  label,
  onLasso,
}: {
  layout: Layout;
  /** RGBA per point, 0-255. */
  colors: Uint8Array;
  label: string;
  onLasso: (indices: number[]) => void;
}) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const surface = useRef<SVGSVGElement>(null);
  const bounds = useMemo(() => boundsOf(layout), [layout]);
  const positions = useMemo(() => viewPositions(layout, bounds), [layout, bounds]);
  const [renderer, setRenderer] = useState<Renderer | undefined>(undefined);
  const [zoom, setZoom] = useState<Zoom>(WHOLE_MAP);
  const [lasso, setLasso] = useState<[number, number][]>([]);
  const [drawing, setDrawing] = useState(false);

  useEffect(() => {
    const element = canvas.current;
    if (!element) return;
    const scale = devicePixelRatio || 1;
    element.width = Math.round(element.clientWidth * scale);
    element.height = Math.round(element.clientHeight * scale);
    const made = webGLRenderer(element, positions, colors) ?? pixelRenderer(element, positions, colors);
    setRenderer(made);
    return () => made.dispose();
  }, [positions, colors]);
  useEffect(() => {
    const base = Math.max(2, Math.min(8, 600 / Math.sqrt(Math.max(1, layout.count))));
    // Points grow as the view closes in, more slowly than the zoom, so crowds separate.
    if (!renderer) return;
    renderer.draw(zoom, Math.min(16, base * Math.sqrt(zoom.scale)) * (devicePixelRatio || 1));
    // What is drawn, for a reader of the page (bench:console waits for it).
    canvas.current!.dataset.drawn = String(layout.count);
  }, [renderer, zoom, layout.count]);
  // The wheel zooms at the pointer; a native listener, as only a non-passive one may keep the page from scrolling.
  useEffect(() => {
    const element = surface.current;
    if (!element) return;
    const onWheel = (event: WheelEvent) => {
      event.preventDefault();
      const box = element.getBoundingClientRect();
      const at: [number, number] = [(event.clientX - box.left) / box.width, (event.clientY - box.top) / box.height];
      setZoom((current) => zoomAt(current, Math.exp(-event.deltaY * 0.002), at));
    };
    element.addEventListener('wheel', onWheel, { passive: false });
    return () => element.removeEventListener('wheel', onWheel);
  }, []);

  const viewPoint = (event: PointerEvent<SVGSVGElement>): [number, number] => {
    const box = event.currentTarget.getBoundingClientRect();
    return [(event.clientX - box.left) / box.width, (event.clientY - box.top) / box.height];
  };
  const onKeyDown = (event: KeyboardEvent<HTMLDivElement>) => {
    const moves: Record<string, (current: Zoom) => Zoom> = {
      '+': (current) => zoomAt(current, ZOOM_STEP),
      '=': (current) => zoomAt(current, ZOOM_STEP),
      '-': (current) => zoomAt(current, 1 / ZOOM_STEP),
      '0': () => WHOLE_MAP,
      ArrowLeft: (current) => pan(current, -PAN_STEP, 0),
      ArrowRight: (current) => pan(current, PAN_STEP, 0),
      ArrowUp: (current) => pan(current, 0, -PAN_STEP),
      ArrowDown: (current) => pan(current, 0, PAN_STEP),
    };
    const move = moves[event.key];
    if (!move) return;
    event.preventDefault();
    setZoom(move);
  };
  return (
    <>
      <div className="toolbar" role="toolbar" aria-label="Map view">
        <button
          type="button"
          onClick={() => setZoom((current) => zoomAt(current, ZOOM_STEP))}
          disabled={zoom.scale >= MAX_ZOOM}
        >
          Zoom in (+)
        </button>
        <button
          type="button"
          onClick={() => setZoom((current) => zoomAt(current, 1 / ZOOM_STEP))}
          disabled={zoom.scale <= 1}
        >
          Zoom out (−)
        </button>
        <button type="button" onClick={() => setZoom(WHOLE_MAP)} disabled={zoom.scale <= 1}>
          Whole map (0)
        </button>
        <span role="status">Zoom ×{zoom.scale.toFixed(1)}</span>
      </div>
      <div
        className="point-cloud"
        tabIndex={0}
        role="group"
        aria-label="Map: + − zoom, 0 the whole map, arrows pan"
        onKeyDown={onKeyDown}
      >
        <canvas
          ref={canvas}
          role="img"
          aria-label={label}
          data-bounds={JSON.stringify([bounds.minX, bounds.maxX, bounds.minY, bounds.maxY])}
          data-zoom={JSON.stringify([zoom.scale, zoom.cx, zoom.cy])}
        />
        <svg
          ref={surface}
          viewBox="0 0 1 1"
          preserveAspectRatio="none"
          aria-hidden="true"
          onPointerDown={(event) => {
            event.currentTarget.setPointerCapture(event.pointerId);
            setDrawing(true);
            setLasso([viewPoint(event)]);
          }}
          onPointerMove={(event) => {
            if (!drawing) return;
            const point = viewPoint(event); // read now: the event's target is gone by the time the update runs
            setLasso((points) => [...points, point]);
          }}
          onPointerUp={() => {
            setDrawing(false);
            if (lasso.length >= 3)
              onLasso(
                pointsInPolygon(
                  layout,
                  bounds,
                  lasso.map((point) => unzoom(zoom, point)),
                ),
              );
          }}
        >
          {lasso.length > 1 ? (
            <polygon className="lasso" points={lasso.map(([x, y]) => `${x},${y}`).join(' ')} />
          ) : null}
        </svg>
      </div>
    </>
  );
}

function viewPositions(layout: Layout, bounds: Bounds): Float32Array {
  const positions = new Float32Array(layout.count * 2);
  for (let index = 0; index < layout.count; index++) {
    const [x, y] = toView(bounds, layout.x[index]!, layout.y[index]!);
    positions[index * 2] = x;
    positions[index * 2 + 1] = y;
  }
  return positions;
}

let softwareWebGL: boolean | undefined;

/** Whether WebGL runs on the CPU here, asked once of a canvas of its own (a canvas given WebGL cannot draw in 2-D). */
function isSoftwareWebGL(): boolean {
  if (softwareWebGL === undefined) {
    const gl = document.createElement('canvas').getContext('webgl');
    const info = gl?.getExtension('WEBGL_debug_renderer_info');
    const renderer = gl ? String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER)) : '';
    softwareWebGL = /swiftshader|llvmpipe|softpipe|software/i.test(renderer);
    gl?.getExtension('WEBGL_lose_context')?.loseContext();
  }
  return softwareWebGL;
}

function webGLRenderer(element: HTMLCanvasElement, positions: Float32Array, colors: Uint8Array): Renderer | undefined {
  // A WebGL without a GPU (SwiftShader) takes about a second to draw a million points, the pixel renderer a tenth.
  if (isSoftwareWebGL()) return undefined;
  const gl = element.getContext('webgl', { antialias: false, preserveDrawingBuffer: true });
  if (!gl) return undefined;
  const program = gl.createProgram();
  const shaders = (
    [
      [gl.VERTEX_SHADER, VERTEX],
      [gl.FRAGMENT_SHADER, FRAGMENT],
    ] as const
  ).map(([type, source]) => {
    const shader = gl.createShader(type)!;
    gl.shaderSource(shader, source);
    gl.compileShader(shader);
    gl.attachShader(program, shader);
    return shader;
  });
  const buffers: WebGLBuffer[] = [];
  let disposed = false;
  const dispose = () => {
    disposed = true;
    for (const buffer of buffers) gl.deleteBuffer(buffer);
    for (const shader of shaders) gl.deleteShader(shader);
    gl.deleteProgram(program);
  };
  gl.linkProgram(program);
  if (!gl.getProgramParameter(program, gl.LINK_STATUS)) {
    dispose();
    return undefined;
  }
  gl.useProgram(program);
  const bind = (
    name: string,
    data: Float32Array | Uint8Array,
    components: number,
    type: number,
    normalized: boolean,
  ) => {
    const buffer = gl.createBuffer();
    buffers.push(buffer);
    gl.bindBuffer(gl.ARRAY_BUFFER, buffer);
    gl.bufferData(gl.ARRAY_BUFFER, data, gl.STATIC_DRAW);
    const location = gl.getAttribLocation(program, name);
    gl.enableVertexAttribArray(location);
    gl.vertexAttribPointer(location, components, type, normalized, 0, 0);
  };
  bind('position', positions, 2, gl.FLOAT, false);
  bind('color', colors, 4, gl.UNSIGNED_BYTE, true);
  const sizeAt = gl.getUniformLocation(program, 'size');
  const zoomAtUniform = gl.getUniformLocation(program, 'zoom');
  gl.viewport(0, 0, element.width, element.height);
  gl.clearColor(1, 1, 1, 1);
  gl.enable(gl.BLEND);
  gl.blendFunc(gl.SRC_ALPHA, gl.ONE_MINUS_SRC_ALPHA);
  return {
    draw: (zoom, size) => {
      // A new layout's first commit may still hold the renderer just disposed: the next one draws.
      if (disposed) return;
      gl.uniform1f(sizeAt, size);
      gl.uniform3f(zoomAtUniform, zoom.scale, zoom.cx, zoom.cy);
      gl.clear(gl.COLOR_BUFFER_BIT);
      gl.drawArrays(gl.POINTS, 0, positions.length / 2);
    },
    dispose,
  };
}

/**
 * The points written straight into the canvas's pixels (no GPU, or no WebGL): each a square of `size` pixels, a disc
 * once larger than 3, blended over white in index order as WebGL blends them.
 */
function pixelRenderer(element: HTMLCanvasElement, positions: Float32Array, colors: Uint8Array): Renderer {
  const draw = (zoom: Zoom, size: number) => {
    const context = element.getContext('2d');
    if (!context) return;
    const { width, height } = element;
    const image = context.createImageData(width, height);
    const pixels = image.data;
    pixels.fill(255);
    const side = Math.max(1, Math.round(size));
    const half = side / 2;
    // The pixel offsets of one point, from its top left corner.
    const offsets: number[] = [];
    for (let dy = 0; dy < side; dy++)
      for (let dx = 0; dx < side; dx++)
        if (side <= 3 || (dx + 0.5 - half) ** 2 + (dy + 0.5 - half) ** 2 <= half * half) offsets.push(dx, dy);
    for (let index = 0; index < positions.length / 2; index++) {
      const left = Math.round(((positions[index * 2]! - zoom.cx) * zoom.scale + 0.5) * width - half);
      const top = Math.round(((positions[index * 2 + 1]! - zoom.cy) * zoom.scale + 0.5) * height - half);
      if (left + side <= 0 || left >= width || top + side <= 0 || top >= height) continue;
      // Plain numbers, no arrays: this runs a million times a draw.
      const alpha = colors[index * 4 + 3]! / 255;
      const keep = 1 - alpha;
      const r = colors[index * 4]! * alpha;
      const g = colors[index * 4 + 1]! * alpha;
      const b = colors[index * 4 + 2]! * alpha;
      for (let at = 0; at < offsets.length; at += 2) {
        const x = left + offsets[at]!;
        const y = top + offsets[at + 1]!;
        if (x < 0 || x >= width || y < 0 || y >= height) continue;
        const pixel = (y * width + x) * 4;
        pixels[pixel] = r + pixels[pixel]! * keep;
        pixels[pixel + 1] = g + pixels[pixel + 1]! * keep;
        pixels[pixel + 2] = b + pixels[pixel + 2]! * keep;
      }
    }
    context.putImageData(image, 0, 0);
  };
  return { draw, dispose: () => undefined };
}
