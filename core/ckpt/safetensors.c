#include "ckpt/safetensors.h"
