/*
** tests/gpu/gpu_probe.c — what the GPU scripts need to know about this
** machine: prints "COUNT NAME" (the number of CUDA devices and the first
** one's name) and exits 0, or exits 77 (the gpu tests' skip code) when
** there is no usable device or driver.
*/
#include <cuda_runtime.h>
#include <stdio.h>

int main(void) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    fprintf(stderr, "no CUDA device: %s\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 77;
  }
  struct cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return 77;
  printf("%d %s\n", count, prop.name);
  return 0;
}
