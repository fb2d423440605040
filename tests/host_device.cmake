# Host execution mode's device size (cudahost/README.md): the default is what the
# machine can back, and allocations past the device fail cleanly. The same source
# twice: the default size, and CUDAHOST_DEVICE_MEMORY=64m.
if(MF_HAVE_HOST_KERNELS)
  mf_add_check_test(test_host_device_size SOURCES unit/test_host_device_size.c LABELS unit memory
                    ENVIRONMENT MF_TEST_DEVICE_SIZE=default)
  mf_add_check_test(test_host_device_size_64m SOURCES unit/test_host_device_size.c LABELS unit memory
                    ENVIRONMENT MF_TEST_DEVICE_SIZE=64m CUDAHOST_DEVICE_MEMORY=64m)
endif()
