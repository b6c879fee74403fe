#include "data/prepare.h"
