# Sourced by the scripts that configure a preset's tree (setup.sh, sanitize.sh, fuzz.sh, lint.sh).
# preset_tree_current DIR: true when DIR holds a tree configured by today's presets (Ninja).
# A tree from an older layout (Makefiles; before the asan tree held the fuzz targets) is then
# configured afresh (cmake --fresh) instead of failing half-way through a build.
preset_tree_current() {
  local cache=$1/CMakeCache.txt
  [ -f "$cache" ] && grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$cache"
}
