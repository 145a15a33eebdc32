/* Placeholder for fastjson2 (not in the oracle's jars): the config v2 classes reference it for topic and group
 * values; `rocksdb-store` runs only ConsumerOffsetManagerV2, whose binary keys and values never call it. */
package com.alibaba.fastjson2;

public final class JSON {
    private JSON() {
    }

    public static byte[] toJSONBytes(Object value) {
        throw new UnsupportedOperationException("fastjson2 is not available in the oracle");
    }

    public static <T> T parseObject(String text, Class<T> clazz) {
        throw new UnsupportedOperationException("fastjson2 is not available in the oracle");
    }
}
