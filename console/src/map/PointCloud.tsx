import { useEffect, useMemo, useRef, useState, type PointerEvent } from 'react';
import { boundsOf, pointsInPolygon, toView, type Bounds } from './projection.ts';
import type { Layout } from './queries.ts';

const VERTEX = `
attribute vec2 position;
attribute vec4 color;
uniform float size;
varying vec4 tint;
void main() {
  gl_Position = vec4(position.x * 2.0 - 1.0, 1.0 - position.y * 2.0, 0.0, 1.0);
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

/**
 * The layout drawn with WebGL (one draw call for every point; a 2-D canvas where WebGL is missing), and a lasso: drag
 * around points to pick every one inside.
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
  const bounds = useMemo(() => boundsOf(layout), [layout]);
  const positions = useMemo(() => viewPositions(layout, bounds), [layout, bounds]);
  const [lasso, setLasso] = useState<[number, number][]>([]);
  const [drawing, setDrawing] = useState(false);

  useEffect(() => {
    const element = canvas.current;
    if (!element) return;
    const scale = devicePixelRatio || 1;
    element.width = Math.round(element.clientWidth * scale);
    element.height = Math.round(element.clientHeight * scale);
    const size = Math.max(2, Math.min(8, 600 / Math.sqrt(Math.max(1, layout.ids.length)))) * scale;
    if (!drawWebGL(element, positions, colors, size)) draw2D(element, positions, colors, size);
  }, [positions, colors, layout.ids.length]);

  const viewPoint = (event: PointerEvent<SVGSVGElement>): [number, number] => {
    const box = event.currentTarget.getBoundingClientRect();
    return [(event.clientX - box.left) / box.width, (event.clientY - box.top) / box.height];
  };
  return (
    <div className="point-cloud">
      <canvas
        ref={canvas}
        role="img"
        aria-label={label}
        data-bounds={JSON.stringify([bounds.minX, bounds.maxX, bounds.minY, bounds.maxY])}
      />
      <svg
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
          if (lasso.length >= 3) onLasso(pointsInPolygon(layout, bounds, lasso));
        }}
      >
        {lasso.length > 1 ? <polygon className="lasso" points={lasso.map(([x, y]) => `${x},${y}`).join(' ')} /> : null}
      </svg>
    </div>
  );
}

function viewPositions(layout: Layout, bounds: Bounds): Float32Array {
  const positions = new Float32Array(layout.ids.length * 2);
  for (let index = 0; index < layout.ids.length; index++) {
    const [x, y] = toView(bounds, layout.x[index]!, layout.y[index]!);
    positions[index * 2] = x;
    positions[index * 2 + 1] = y;
  }
  return positions;
}

function drawWebGL(element: HTMLCanvasElement, positions: Float32Array, colors: Uint8Array, size: number): boolean {
  const gl = element.getContext('webgl', { antialias: false, preserveDrawingBuffer: true });
  if (!gl) return false;
  const program = gl.createProgram();
  for (const [type, source] of [
    [gl.VERTEX_SHADER, VERTEX],
    [gl.FRAGMENT_SHADER, FRAGMENT],
  ] as const) {
    const shader = gl.createShader(type)!;
    gl.shaderSource(shader, source);
    gl.compileShader(shader);
    gl.attachShader(program, shader);
  }
  gl.linkProgram(program);
  if (!gl.getProgramParameter(program, gl.LINK_STATUS)) return false;
  gl.useProgram(program);
  const bind = (
    name: string,
    data: Float32Array | Uint8Array,
    components: number,
    type: number,
    normalized: boolean,
  ) => {
    const buffer = gl.createBuffer();
    gl.bindBuffer(gl.ARRAY_BUFFER, buffer);
    gl.bufferData(gl.ARRAY_BUFFER, data, gl.STATIC_DRAW);
    const location = gl.getAttribLocation(program, name);
    gl.enableVertexAttribArray(location);
    gl.vertexAttribPointer(location, components, type, normalized, 0, 0);
  };
  bind('position', positions, 2, gl.FLOAT, false);
  bind('color', colors, 4, gl.UNSIGNED_BYTE, true);
  gl.uniform1f(gl.getUniformLocation(program, 'size'), size);
  gl.viewport(0, 0, element.width, element.height);
  gl.clearColor(1, 1, 1, 1);
  gl.clear(gl.COLOR_BUFFER_BIT);
  gl.enable(gl.BLEND);
  gl.blendFunc(gl.SRC_ALPHA, gl.ONE_MINUS_SRC_ALPHA);
  gl.drawArrays(gl.POINTS, 0, positions.length / 2);
  return true;
}

function draw2D(element: HTMLCanvasElement, positions: Float32Array, colors: Uint8Array, size: number): void {
  const context = element.getContext('2d');
  if (!context) return;
  context.fillStyle = '#fff';
  context.fillRect(0, 0, element.width, element.height);
  for (let index = 0; index < positions.length / 2; index++) {
    const [r, g, b, a] = colors.subarray(index * 4, index * 4 + 4);
    context.fillStyle = `rgba(${r},${g},${b},${(a ?? 255) / 255})`;
    context.fillRect(
      positions[index * 2]! * element.width - size / 2,
      positions[index * 2 + 1]! * element.height - size / 2,
      size,
      size,
    );
  }
}
