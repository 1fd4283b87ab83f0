#!/usr/bin/env bash
# Offline test images for the i20 prototypes, all from package registries (nothing from a model or data hub):
#   base/      71 images: scikit-image 0.26.0's bundled data (CC0 / public domain, astronaut = NASA, public domain),
#              opencv-doc 4.6.0's examples/data (one of each stereo/sequence pair), @vladmandic/face-api 1.7.15's demo
#              sample1-6.jpg (group photos with faces; their licence is not stated: fine for local tests, not to commit)
#   distract/  321 images over 30 KB from opencv-doc's HTML manual (figures, photos, screenshots)
#   faces/     face-api's samples + @vladmandic/human 3.3.6's assets/samples.jpg; lfw/ = scikit-image's lfw_subset
#              (100 faces, 100 non-faces, 25x25 grey) enlarged to 96 px on a 160 px grey canvas
# Usage: tools/i20/collect-images.sh OUT_DIR [PYTHON with numpy+Pillow]
set -euo pipefail
out=$(realpath -m "$1"); py=${2:-python3}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$out"/{base,distract,faces,lfw,sk}
cd "$work"
pip download --quiet --no-deps --only-binary=:all: -d . scikit-image==0.26.0
unzip -oqj scikit_image-*.whl 'skimage/data/*.png' 'skimage/data/*.jpg' 'skimage/data/lfw_subset.npy' -d "$out/sk"
apt-get download opencv-doc=4.6.0+dfsg-12 >/dev/null && dpkg-deb -x opencv-doc_*.deb doc
npm pack --silent @vladmandic/face-api@1.7.15 @vladmandic/human@3.3.6 >/dev/null
for n in astronaut chelsea coffee rocket motorcycle_left hubble_deep_field retina ihc camera coins page text moon brick grass gravel horse logo color cell clock_motion; do
  f=$(ls "$out"/sk/$n.*); cp "$f" "$out/base/sk_$(basename "$f")"
done
data=doc/usr/share/doc/opencv-doc/examples/data
for n in Blender_Suzanne1.jpg HappyFish.jpg LinuxLogo.jpg WindowsLogo.jpg aero1.jpg aloeL.jpg apple.jpg baboon.jpg basketball1.png blox.jpg board.jpg box.png box_in_scene.png building.jpg butterfly.jpg cards.png chessboard.png chicky_512.png digits.png ela_original.jpg ellipses.jpg fruits.jpg graf1.png home.jpg left01.jpg leuvenA.jpg licenseplate_motion.jpg messi5.jpg ml.png notes.png opencv-logo.png orange.jpg pca_test1.jpg pic1.png pic3.png pic5.png rubberwhale1.png smarties.png squirrel_cls.jpg starry_night.jpg stuff.jpg sudoku.png text_defocus.jpg imageTextN.png; do
  cp "$data/$n" "$out/base/cv_$n"
done
find doc/usr/share/doc/opencv-doc/opencv4/html -maxdepth 1 \( -name '*.jpg' -o -name '*.png' \) -size +30k -exec cp {} "$out/distract/" \;
tar xzf vladmandic-face-api-1.7.15.tgz package/demo && tar xzf vladmandic-human-3.3.6.tgz package/assets/samples.jpg
for f in package/demo/sample*.jpg; do cp "$f" "$out/faces/"; cp "$f" "$out/base/fa_$(basename "$f")"; done
cp package/assets/samples.jpg "$out/faces/human-samples.jpg"
"$py" - "$out" <<'PY'
import sys, numpy as np
from PIL import Image
out = sys.argv[1]
for i, x in enumerate(np.load(f"{out}/sk/lfw_subset.npy")):
    canvas = Image.new("L", (160, 160), 128)
    canvas.paste(Image.fromarray((x * 255).astype("uint8")).resize((96, 96), Image.BICUBIC), (32, 32))
    canvas.save(f"{out}/lfw/{'face' if i < 100 else 'non'}_{i:03d}.png")
PY
echo "base $(ls "$out/base" | wc -l), distract $(ls "$out/distract" | wc -l), faces $(ls "$out/faces" | wc -l), lfw $(ls "$out/lfw" | wc -l)"
