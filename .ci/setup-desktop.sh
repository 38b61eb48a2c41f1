#!/usr/bin/env bash
# Install what the Linux AT-SPI backend, its tests and the demo need on Debian/Ubuntu: a virtual
# X server and a headless Wayland compositor with PipeWire and the desktop portal, the session
# and accessibility buses, GTK 4, GTK 3, Qt 5, LibreOffice and browser
# test apps, Debian's libatspi through python3-gi (the reference client for benchmarks) and OCR
# to read screenshots back in tests. Idempotent: it installs only what is missing, so a second
# run needs no network.
set -euo pipefail

packages=(
  xvfb xauth                     # the virtual display
  dbus dbus-bin dbus-daemon      # private session buses
  at-spi2-core libatk-adaptor    # a11y bus launcher + registry; GTK 3's bridge to it
  gnome-calculator               # GTK 4 test app
  galculator                     # GTK 3 test app
  mousepad gnome-text-editor     # GTK 3 and GTK 4 editors: input-target and real-app tests
  geany                          # GTK 3 menu bar, check items, a modal dialog: real-app tests
  gucharmap                      # GTK 3 long list (Character Map's scripts): real-app tests
  gir1.2-gtk-3.0                 # the tests' witness app (GTK 3 through python3-gi)
  python3-gi gir1.2-atspi-2.0    # libatspi through GI: reference dumps, never in the daemon
  xdotool x11-utils              # optional: poking at the display by hand (xdotool, xwininfo)
  tesseract-ocr                  # reads the demo's screenshot back in its test (does it show 13?)
  gtk-4-examples gnome-clocks    # GTK 4 widgets (gtk4-widget-factory): drop-downs, dialogs, stacks
  featherpad speedcrunch         # Qt 5 apps: the bridge that GetAll crashed, menus, dialogs
  libreoffice-writer libreoffice-calc libreoffice-gtk3  # LibreOffice: bounded reads of what it manages
  firefox-esr chromium           # browsers: accessibility switched on only when asked
  mutter                         # a headless GNOME compositor: the Wayland session of the tests
  pipewire pipewire-bin wireplumber  # screen casts travel through PipeWire
  gstreamer1.0-pipewire gstreamer1.0-tools  # gst-launch + pipewiresrc: a frame of a screen cast
  xdg-desktop-portal xdg-desktop-portal-gnome  # the remote-desktop portal and its dialog
  kwin-wayland qtwayland5        # KDE Plasma's compositor (virtual backend); Qt 5 on Wayland
)

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$pkg")
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup-desktop: all ${#packages[@]} packages already installed"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
echo "setup-desktop: installing ${missing[*]}"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup-desktop: done"
