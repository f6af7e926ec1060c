// pinbench: measures how fast data reaches a GPU and how well GPU memory is used.
#include "commands.hpp"

int main(int argc, char** argv) {
  return pinbench::app::run_cli(argc, argv);
}
