// libsystemc.so refers to sc_main; in a program that loads the simulator as a library (a Python
// process) nothing calls it (the platform drives SystemC itself), but the symbol must resolve.
extern "C" int sc_main(int, char**) { return 0; }
