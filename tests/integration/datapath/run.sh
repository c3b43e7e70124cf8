#!/usr/bin/env bash
# Run one data-path case through our libraries (the test binary links them by RPATH-less
# name; LD_LIBRARY_PATH makes sure build/lib wins over the system's).
. "$(dirname "$0")/../lib.sh"
sr_run "$@"
