/* A plugin's stand-in for the symbols test: a shared object that holds the
 * whole static libpleat (tests/CMakeLists.txt) and defines nothing of its
 * own, so every name it exports would be pleat's. */
typedef int pleat_plugin_probe_is_empty;
