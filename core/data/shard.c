#include "data/shard.h"
