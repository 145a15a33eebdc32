/* Placeholder for fastjson2's KotlinUtils (its real body needs kotlin-reflect, not in the oracle's jars):
 * fastjson2 calls it only for classes annotated kotlin.Metadata, which no RocketMQ bean is. */
package com.alibaba.fastjson2.util;

import com.alibaba.fastjson2.codec.BeanInfo;

public final class KotlinUtils {
    public static final int STATE = 0;

    private KotlinUtils() {
    }

    public static void getConstructor(Class<?> clazz, BeanInfo beanInfo) {
        throw new UnsupportedOperationException("Kotlin classes are not supported in the oracle: " + clazz);
    }
}
