import { router } from '../../trpc';
import { cancelOrder } from './cancel-order';
import { createOrder } from './create-order';
import { getOrder } from './get-order';
import { listOrderExceptions } from './list-order-exceptions';

export const ordersRouter = router({ create: createOrder, get: getOrder, cancel: cancelOrder, exceptions: listOrderExceptions });
