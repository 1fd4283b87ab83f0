#!/usr/bin/python3
# An RTSP camera for the tests: Debian's gst-rtsp-server (python3-gi, so the system Python) serving one still picture as
# a live H.264 stream, rtsp://127.0.0.1:<port>/stream. Prints that URL on stdout once it listens, then serves until
# SIGTERM. Usage: rtsp-source.py PICTURE [--port N] [--fps N] (port 0, the default: a free one).
import argparse
import signal
import sys
from pathlib import Path

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
gi.require_version("GstPbutils", "1.0")
from gi.repository import GLib, Gst, GstPbutils, GstRtspServer  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("picture")
parser.add_argument("--port", type=int, default=0)
parser.add_argument("--fps", type=int, default=10)
args = parser.parse_args()

Gst.init(None)
picture = Path(args.picture).resolve()
video = GstPbutils.Discoverer.new(10 * Gst.SECOND).discover_uri(picture.as_uri()).get_video_streams()[0]
# x264 takes even sizes only: an odd side gets a black line (videobox's negative margin), the picture itself unchanged.
pad_right, pad_bottom = video.get_width() % 2, video.get_height() % 2
# imagefreeze repeats the decoded picture as a live stream; a low quantizer keeps the frames close to the picture, so
# the model finds in them what it finds in the original.
location = str(picture).replace("\\", "\\\\").replace('"', '\\"')
pipeline = (
    f'( filesrc location="{location}" ! decodebin ! imagefreeze is-live=true ! videoconvert ! '
    f"videobox right=-{pad_right} bottom=-{pad_bottom} ! video/x-raw,format=I420,framerate={args.fps}/1 ! x264enc tune=zerolatency speed-preset=ultrafast pass=quant "
    f"quantizer=10 key-int-max={args.fps} ! rtph264pay name=pay0 pt=96 config-interval=1 )"
)
factory = GstRtspServer.RTSPMediaFactory()
factory.set_launch(pipeline)
factory.set_shared(True)
server = GstRtspServer.RTSPServer()
server.set_address("127.0.0.1")
server.set_service(str(args.port))
server.get_mount_points().add_factory("/stream", factory)
if server.attach(None) == 0:
    sys.exit(f"cannot listen on port {args.port}")

loop = GLib.MainLoop()
GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, loop.quit)
GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGINT, loop.quit)
print(f"rtsp://127.0.0.1:{server.get_bound_port()}/stream", flush=True)
loop.run()
